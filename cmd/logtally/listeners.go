package main

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"strings"
)

// Who may reach which listener is settled before anything starts: an
// admin listener that another machine could reach, with no token, is a
// mistake on the command line, not something to warn of in a log nobody
// reads while the status and the rejected lines are served to the world.

// errAdminExposed is the refusal of an admin listener off loopback without
// a token.
var errAdminExposed = errors.New("the admin listener (status, metrics, dashboard) would be reachable from other machines without a token")

// minTokenLen is the shortest admin token taken: a guess at a shorter one
// would be within reach of an attacker who can try many.
const minTokenLen = 16

// check takes --listen for --admin-listen, reads the admin token, and
// reports settings that cannot work or that would expose the admin API.
func (c *serveConfig) check() error {
	var errs []error
	c.adminFlag = "--admin-listen"
	if c.listen != "" {
		if c.adminSet && c.AdminListen != c.listen {
			errs = append(errs, fmt.Errorf("--listen %s and --admin-listen %s: --listen is the old name of --admin-listen; give --admin-listen only",
				c.listen, c.AdminListen))
		}
		c.AdminListen, c.adminFlag = c.listen, "--listen"
	}
	if c.AdminTokenFile != "" {
		token, err := readToken(c.AdminTokenFile)
		if err != nil {
			errs = append(errs, err)
		}
		c.API.AdminToken = token
	}
	if !loopback(c.AdminListen) && c.AdminTokenFile == "" {
		errs = append(errs, fmt.Errorf("%s %s: %w: serve the public figures with --public-listen %s and keep the admin listener on 127.0.0.1, or require a token there with --admin-token-file FILE",
			c.adminFlag, c.AdminListen, errAdminExposed, c.AdminListen))
	}
	if c.PublicListen != "" && c.PublicListen == c.AdminListen && !anyPort(c.PublicListen) {
		errs = append(errs, fmt.Errorf("--public-listen %s: the admin listener's address too: give each its own", c.PublicListen))
	}
	if len(c.API.CORSOrigins) > 0 && c.PublicListen == "" {
		errs = append(errs, errors.New("--cors-origin: the CORS headers are sent on the public listener only: add --public-listen ADDRESS, and publish that one"))
	}
	return errors.Join(append(errs, c.API.Validate())...)
}

// loopback reports whether addr's host is a loopback address or localhost:
// no other machine can reach it. An empty host is every interface.
func loopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.IsLoopback()
}

// anyPort reports whether addr asks for a port the system picks (port 0),
// which two listeners may both ask for.
func anyPort(addr string) bool {
	_, port, err := net.SplitHostPort(addr)
	return err == nil && (port == "0" || port == "")
}

// readToken reads the admin token from file: its content less the
// surrounding white space (a final newline, as an editor writes it).
func readToken(file string) (string, error) {
	const fix = "write a random one into it, such as: head -c 32 /dev/urandom | base64 > FILE; chmod 600 FILE"
	data, err := os.ReadFile(file)
	if err != nil {
		return "", fmt.Errorf("--admin-token-file: %w", err)
	}
	token := strings.TrimSpace(string(data))
	switch {
	case token == "":
		return "", fmt.Errorf("--admin-token-file %s: empty: %s", file, fix)
	case len(token) < minTokenLen:
		return "", fmt.Errorf("--admin-token-file %s: a token of %d bytes is too easily guessed (want %d or more): %s",
			file, len(token), minTokenLen, fix)
	case strings.ContainsAny(token, "\r\n"):
		return "", fmt.Errorf("--admin-token-file %s: more than one line: the token is one line; %s", file, fix)
	}
	return token, nil
}
