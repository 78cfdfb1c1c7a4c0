package storage

import (
	"math/rand/v2"
	"testing"
	"time"
)

// TestDayCacheIsDayKey: the day a dayCache gives a minute is its dayKey,
// in zones of odd offsets, across changes of offset at midnight and at
// other hours, and in a zone's offset in seconds before 1900, whether the
// minutes come in order or jump about.
func TestDayCacheIsDayKey(t *testing.T) {
	for _, tc := range []struct {
		zone string
		from time.Time // two days of minutes from here
	}{
		{"UTC", time.Date(2026, 11, 21, 0, 0, 0, 0, time.UTC)},
		{"Europe/Paris", time.Date(2026, 3, 28, 12, 0, 0, 0, time.UTC)},
		{"Europe/Paris", time.Date(2026, 10, 24, 12, 0, 0, 0, time.UTC)},
		{"America/St_Johns", time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)},
		{"Australia/Lord_Howe", time.Date(2026, 4, 4, 0, 0, 0, 0, time.UTC)},
		{"Asia/Kathmandu", time.Date(2026, 11, 21, 0, 0, 0, 0, time.UTC)},
		{"Pacific/Chatham", time.Date(2026, 4, 4, 0, 0, 0, 0, time.UTC)},
		{"America/Sao_Paulo", time.Date(2018, 11, 3, 0, 0, 0, 0, time.UTC)}, // a day that began at 01:00
		{"America/Sao_Paulo", time.Date(2019, 2, 16, 0, 0, 0, 0, time.UTC)}, // 00:00 back to 23:00
		{"Europe/Amsterdam", time.Date(1900, 6, 1, 0, 0, 0, 0, time.UTC)},   // +00:19:32
	} {
		t.Run(tc.zone+" "+tc.from.Format(time.DateOnly), func(t *testing.T) {
			loc, err := time.LoadLocation(tc.zone)
			if err != nil {
				t.Fatal(err)
			}
			first := tc.from.Unix() / 60
			minutes := make([]int64, 2*24*60)
			for i := range minutes {
				minutes[i] = first + int64(i)
			}
			shuffled := append([]int64(nil), minutes...)
			rand.New(rand.NewPCG(1, 2)).Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
			for _, order := range [][]int64{minutes, shuffled} {
				c := dayCache{loc: loc}
				for _, m := range order {
					if got, want := c.of(m), string(dayKey(unixMinute(m), loc)); got != want {
						t.Fatalf("minute %s: day %x, want %x", unixMinute(m), got, want)
					}
				}
			}
		})
	}
}
