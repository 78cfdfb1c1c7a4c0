// Package sweep is for tests: it plays the one who has the database and
// wants the addresses back, hashing candidate IPv4 addresses with every
// key and salt found in the data and looking for the stored hashes.
//
// The whole IPv4 space is 2^32 hashes a key, minutes on two cores: a
// sweep covers the /16s a test's visitors come from, where every one of
// them is, plus a random sample of the rest, which would find what a
// full sweep finds at its rate.
package sweep

import (
	"encoding/binary"
	"math/rand/v2"
	"net/netip"
	"strconv"

	"github.com/dchest/siphash"
)

// Key is a visitor-hash key of today's kind: SipHash-2-4 of the address.
type Key struct{ K0, K1 uint64 }

// Found is what someone holding the data has to hash with.
type Found struct {
	Keys  []Key
	Salts []uint64 // salts of schema 3 and before: FNV-1a then splitmix64
}

// OldHash is the visitor hash of logtally before keyed hashes: FNV-1a 64
// from the offset basis xor the salt, then the splitmix64 finalizer.
func OldHash(salt uint64, addr []byte) uint64 {
	h := uint64(14695981039346656037) ^ salt
	for _, c := range addr {
		h ^= uint64(c)
		h *= 1099511628211
	}
	h ^= h >> 30
	h *= 0xbf58476d1ce4e5b9
	h ^= h >> 27
	h *= 0x94d049bb133111eb
	h ^= h >> 31
	return h
}

// Match hashes every address of the /16s nets and sample random others
// with every key and salt found, and returns those whose hash is stored.
func Match(found Found, stored map[uint64]bool, nets []netip.Prefix, sample int, seed uint64) []string {
	var out []string
	var buf []byte
	try := func(a [4]byte) {
		buf = appendIP(buf[:0], a)
		for _, k := range found.Keys {
			if stored[siphash.Hash(k.K0, k.K1, buf)] {
				out = append(out, string(buf))
			}
		}
		for _, s := range found.Salts {
			if stored[OldHash(s, buf)] {
				out = append(out, string(buf))
			}
		}
	}
	for _, n := range nets {
		base := n.Masked().Addr().As4()
		for i := range 1 << 16 {
			try([4]byte{base[0], base[1], byte(i >> 8), byte(i)})
		}
	}
	r := rand.New(rand.NewPCG(seed, 29))
	for range sample {
		var a [4]byte
		binary.BigEndian.PutUint32(a[:], r.Uint32())
		try(a)
	}
	return out
}

// appendIP writes a dotted quad.
func appendIP(b []byte, a [4]byte) []byte {
	for i, o := range a {
		if i > 0 {
			b = append(b, '.')
		}
		b = strconv.AppendUint(b, uint64(o), 10)
	}
	return b
}
