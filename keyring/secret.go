package keyring

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"time"
)

// MinSecret is the fewest bytes a visitor secret holds: a 128-bit key.
const MinSecret = 16

// ErrNoSecret means fleet mode was asked for without a visitor secret.
var ErrNoSecret = errors.New("--fleet needs --visitor-secret-file: every node hashes visitors with keys derived from one secret " +
	"that the fleet database never holds; make one with `head -c 32 /dev/urandom > FILE`, give every node a copy, " +
	"and start each with --visitor-secret-file FILE")

// Config is where the keys come from, as the operator says.
type Config struct {
	// SecretFile names a file of at least MinSecret bytes from which each
	// day's key is derived; empty: random keys kept beside the database
	// (fleet mode requires a secret).
	SecretFile string
}

// RegisterFlags registers the keys' flag on fs.
func (c *Config) RegisterFlags(fs *flag.FlagSet) {
	fs.StringVar(&c.SecretFile, "visitor-secret-file", "",
		"`file` of a secret (at least 16 bytes, e.g. head -c 32 /dev/urandom > FILE) from which each day's visitor-hash key is derived, "+
			"so that no key is stored; required with --fleet, the same on every node (default: a random key a day, kept beside the database until the day is over)")
}

// Secret is the secret of --visitor-secret-file.
type Secret struct{ b []byte }

// ReadSecret reads the secret file path.
func ReadSecret(path string) (Secret, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return Secret{}, fmt.Errorf("--visitor-secret-file: %w", err)
	}
	if len(b) < MinSecret {
		return Secret{}, fmt.Errorf("--visitor-secret-file %s: %d bytes, want at least %d: make one with `head -c 32 /dev/urandom > %s`",
			path, len(b), MinSecret, path)
	}
	return Secret{b}, nil
}

// mac returns HMAC-SHA-256 of msg under the secret.
func (s Secret) mac(msg string) []byte {
	h := hmac.New(sha256.New, s.b)
	h.Write([]byte(msg))
	return h.Sum(nil)
}

// Key returns the key of a day (yyyymmdd): HMAC-SHA-256(secret, "logtally
// visitor key " + the day as 2006-01-02), its first 16 bytes.
func (s Secret) Key(day uint32) Key {
	m := s.mac("logtally visitor key " + dayString(day))
	return Key{binary.LittleEndian.Uint64(m[:8]), binary.LittleEndian.Uint64(m[8:16])}
}

// Verifier returns what nodes compare to know that they were given the
// same secret: HMAC-SHA-256(secret, "logtally verifier"). It is safe to
// store where the keys must not be: it is another message's MAC, which
// tells nothing of the secret nor of any day's key.
func (s Secret) Verifier() []byte { return s.mac("logtally verifier") }

// Ring returns a ring of keys derived from the secret, for days in loc.
// It stores nothing.
func (s Secret) Ring(loc *time.Location, keep time.Duration, logger *slog.Logger) *Ring {
	r := newRing(loc, keep, logger)
	r.derive = s.Key
	return r
}

// Day returns the yyyymmdd day of unix second t in loc.
func Day(t int64, loc *time.Location) uint32 {
	y, m, d := time.Unix(t, 0).In(loc).Date()
	return uint32(y*10000 + int(m)*100 + d)
}
