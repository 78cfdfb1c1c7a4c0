package api

import (
	"crypto/sha256"
	"crypto/subtle"
	"net/http"
	"strings"
)

// The admin listener's token (Config.AdminToken, from --admin-token-file)
// is for operators who must reach it from elsewhere than the machine
// itself. A client sends it as a bearer token (Authorization: Bearer
// TOKEN), or as the password of HTTP basic authentication under any user
// name: that is what a browser asks for and then sends with every request
// of the dashboard, its event stream included, which a page cannot give a
// header of its own.

// authChallenges are the schemes a 401 offers: basic first, which makes a
// browser ask for the token, then bearer.
var authChallenges = []string{`Basic realm="logtally admin", charset="UTF-8"`, `Bearer realm="logtally admin"`}

// errUnauthorized is the answer to a request without the right token. It
// says the same whether the token was missing or wrong.
var errUnauthorized = &Error{Code: CodeUnauthorized,
	Message: "the admin API needs its token: send Authorization: Bearer TOKEN, or TOKEN as the password of basic authentication (see --admin-token-file)"}

// tokenSum is what the admin token is kept and compared as: its SHA-256,
// so that the comparison takes the same time whatever the length of the
// token sent, and the token itself is not kept.
type tokenSum [sha256.Size]byte

// newTokenSum returns the sum of token, or nil for no token.
func newTokenSum(token string) *tokenSum {
	if token == "" {
		return nil
	}
	sum := tokenSum(sha256.Sum256([]byte(token)))
	return &sum
}

// matches reports whether given is the token, in constant time
// (crypto/subtle): how long it takes tells nothing of how much of given
// was right.
func (t *tokenSum) matches(given string) bool {
	sum := sha256.Sum256([]byte(given))
	return subtle.ConstantTimeCompare(sum[:], t[:]) == 1
}

// authorize returns errUnauthorized, with the challenges set on w, unless
// no token is set or r carries it.
func (s *Server) authorize(w http.ResponseWriter, r *http.Request) error {
	if s.token == nil {
		return nil
	}
	if given, ok := credential(r); ok && s.token.matches(given) {
		return nil
	}
	w.Header()["Www-Authenticate"] = authChallenges
	return errUnauthorized
}

// credential returns the token r carries: a bearer token, or the password
// of basic authentication.
func credential(r *http.Request) (string, bool) {
	h := r.Header.Get("Authorization")
	if scheme, token, ok := strings.Cut(h, " "); ok && strings.EqualFold(scheme, "Bearer") {
		return strings.TrimSpace(token), true
	}
	if _, password, ok := r.BasicAuth(); ok {
		return password, true
	}
	return "", false
}
