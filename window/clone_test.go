package window

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	"github.com/logtally/logtally"
)

// TestCloneCountsApart: a clone taken at any point, with paths folded,
// visitors estimated, pairs kept and hits held, goes on exactly as the
// window it was taken from given the same hits afterwards, and neither
// sees the hits the other alone is given.
func TestCloneCountsApart(t *testing.T) {
	for seed := range uint64(12) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 3))
			cfg := Config{Length: 30 * time.Second, MaxSkew: 3 * time.Second, MaxPaths: 1 + rng.IntN(40),
				MaxVisitors: 1000, PathVisitors: true, MaxPairs: 1000, Pages: 100}
			if seed%2 == 1 { // folded paths, estimated visitors, pairs turned away
				cfg.MaxPaths, cfg.MaxVisitors, cfg.MaxPairs = 1+rng.IntN(20), 5+rng.IntN(40), 10+rng.IntN(100)
			}
			// twin is given what a is, always; bref what b is: a's hits up
			// to the clone, its own after.
			a, twin, bref := New(cfg, t0), New(cfg, t0), New(cfg, t0)
			now := t0.Unix()
			hit := func() logtally.Hit {
				return logtally.Hit{Time: now - int64(rng.IntN(33)) + int64(rng.IntN(5)), PageView: rng.IntN(4) > 0,
					Visitor: mix(uint64(rng.IntN(60))), Path: fmt.Appendf(nil, "/p%d", rng.IntN(30))}
			}
			step := func(ws ...*Window) {
				if rng.IntN(10) == 0 {
					now += int64(rng.IntN(3))
					for _, w := range ws {
						w.Advance(time.Unix(now, 0))
					}
					return
				}
				h := hit()
				for _, w := range ws {
					w.Add(h)
				}
			}
			for range 1 + rng.IntN(2000) {
				step(a, twin, bref)
			}
			b := a.Clone()
			for range 500 {
				if rng.IntN(2) == 0 {
					step(a, twin)
				} else {
					step(b, bref)
				}
			}
			if got, want := publish(a), publish(twin); !reflect.DeepEqual(got, want) {
				t.Errorf("the window cloned from:\n%+v\nthe same hits, never cloned:\n%+v", got, want)
			}
			if got, want := publish(b), publish(bref); !reflect.DeepEqual(got, want) {
				t.Errorf("the clone:\n%+v\nthe same hits, never cloned:\n%+v", got, want)
			}
			if reflect.DeepEqual(publish(a), publish(b)) {
				t.Error("the clone and its window answer alike after different hits")
			}
		})
	}
}

// TestAlike: windows are alike when configured alike, and not when any
// of what they hold or carry differs.
func TestAlike(t *testing.T) {
	base := Config{Length: 30 * time.Second, MaxSkew: 3 * time.Second, MaxPaths: 100, MaxVisitors: 1000, Pages: 10}
	for _, tt := range []struct {
		name string
		edit func(*Config)
		want bool
	}{
		{"the same", func(*Config) {}, true},
		{"length", func(c *Config) { c.Length = time.Minute }, false},
		{"skew", func(c *Config) { c.MaxSkew = 0 }, false},
		{"paths", func(c *Config) { c.MaxPaths = 7 }, false},
		{"visitors", func(c *Config) { c.MaxVisitors = 7 }, false},
		{"pages", func(c *Config) { c.Pages = 7 }, false},
		{"visitors per path", func(c *Config) { c.PathVisitors = true }, false},
	} {
		other := base
		tt.edit(&other)
		if got := New(base, t0).Alike(New(other, t0)); got != tt.want {
			t.Errorf("%s: Alike = %v, want %v", tt.name, got, tt.want)
		}
	}
}
