package breakdown

import (
	"slices"
	"testing"
	"time"

	"github.com/logtally/logtally/parser"
)

func TestTimeBucket(t *testing.T) {
	for _, tt := range []struct {
		d    time.Duration
		want string
	}{
		{0, "10ms"},
		{10 * time.Millisecond, "10ms"},
		{10*time.Millisecond + 1, "25ms"},
		{99 * time.Millisecond, "100ms"},
		{time.Second, "1s"},
		{2 * time.Second, "2.5s"},
		{10 * time.Second, "10s"},
		{10*time.Second + 1, TimeOver},
		{time.Hour, TimeOver},
	} {
		if got := timeBucket(tt.d); got != tt.want {
			t.Errorf("timeBucket(%s) = %q, want %q", tt.d, got, tt.want)
		}
	}
	keys := TimeKeys()
	if len(keys) != len(timeBounds)+1 || keys[0] != "10ms" || keys[len(keys)-1] != TimeOver {
		t.Errorf("TimeKeys() = %q", keys)
	}
	for i := 1; i < len(timeBounds); i++ {
		if timeBounds[i].max <= timeBounds[i-1].max {
			t.Errorf("bound %d (%s) is not above the one before", i, timeBounds[i].max)
		}
	}
}

// TestRequestTimeNeedsTimedFormat: the request-time breakdown gives every
// request its bucket, page view or not, when the format logs how long it
// took, and is off, with no key, when it does not.
func TestRequestTimeNeedsTimedFormat(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Breakdowns = []string{"request-time"}
	for _, timed := range []bool{true, false} {
		d, err := New(cfg, Deps{Timed: timed})
		if err != nil {
			t.Fatal(err)
		}
		r := &parser.Record{Status: 200, RequestTime: 180 * time.Millisecond}
		var m Memo
		var page, req Keys
		d.Derive(r, &m, &page)
		d.DeriveRequest(r, &req)
		gotPage, okPage := page.Key(RequestTime)
		gotReq, okReq := req.Key(RequestTime)
		if d.On(RequestTime) != timed || okPage != timed || okReq != timed {
			t.Errorf("timed %v: on %v, keys %v %v", timed, d.On(RequestTime), okPage, okReq)
		}
		if timed && (string(gotPage) != "250ms" || string(gotReq) != "250ms") {
			t.Errorf("keys %q %q, want 250ms", gotPage, gotReq)
		}
		if want := []Breakdown{RequestTime}; timed && !slices.Equal(d.Breakdowns(), want) {
			t.Errorf("Breakdowns() = %v, want %v", d.Breakdowns(), want)
		}
	}
}
