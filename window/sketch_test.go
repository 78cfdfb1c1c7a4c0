package window

import (
	"math/rand/v2"
	"testing"
	"time"
)

func TestSketchEstimate(t *testing.T) {
	s := new(sketch)
	rng := rand.New(rand.NewPCG(5, 5))
	// 200,000 visitors spread over seconds 1..200; a window from second k
	// holds those of seconds after k.
	for i := range 200_000 {
		s.add(mix(rng.Uint64()), int64(1+i/1000))
	}
	for _, tt := range []struct {
		start int64
		want  float64
	}{{0, 200_000}, {100, 100_000}, {190, 10_000}, {199, 1000}, {200, 0}} {
		got := float64(s.estimate(tt.start))
		if got < tt.want*0.97 || got > tt.want*1.03 {
			t.Errorf("estimate after second %d = %.0f, want %.0f ±3%%", tt.start, got, tt.want)
		}
	}
}

// TestVisitorCap checks the switch to an estimate past MaxVisitors and the
// way back to exact counts once the crowd has left.
func TestVisitorCap(t *testing.T) {
	const length = 10
	w := New(Config{Length: length * time.Second, MaxVisitors: 1000}, t0)
	for i := range 5000 {
		w.Add(pv(-int64(i%5), mix(uint64(i)), "/a"))
	}
	s := publish(w)
	if !s.Approximate || s.Visitors < 4850 || s.Visitors > 5150 || s.PageViews != 5000 {
		t.Fatalf("past the cap: %+v, want about 5000 visitors, approximate", s)
	}
	// The crowd leaves; a few come back each second.
	for sec := int64(1); sec <= 30; sec++ {
		w.Advance(t0.Add(time.Duration(sec) * time.Second))
		for v := range uint64(10) {
			w.Add(pv(sec, mix(v), "/b"))
		}
		s = publish(w)
		switch {
		case sec <= 5 && !s.Approximate:
			t.Fatalf("at +%d: exact while the crowd is in the window", sec)
		case sec < 20 && s.Visitors != 10 && sec > length:
			t.Fatalf("at +%d: estimate %d, want 10", sec, s.Visitors)
		case sec >= 20 && (s.Approximate || s.Visitors != 10):
			// The crowd left at +10, when an exact set was started; a
			// window later, at +20, it covers the whole window.
			t.Fatalf("at +%d: %+v, want 10 exact visitors", sec, s)
		}
	}
}
