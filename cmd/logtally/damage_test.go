package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/logtally/logtally"
	damagetest "github.com/logtally/logtally/internal/damage"
	"github.com/logtally/logtally/internal/poll"
	"github.com/logtally/logtally/storage"
	"github.com/logtally/logtally/tally"
)

// damagedStart is where the history of damagedDB begins.
var damagedStart = time.Date(2026, 3, 2, 0, 0, 0, 0, time.UTC)

// damagedDB writes a database of about 32 MB, six days of busy minutes,
// then overwrites 1 to 4 bytes of 20 of its records (minutes, hours and
// days) chosen at random where they lie in its leaf pages, and returns its
// path.
func damagedDB(t *testing.T) string {
	t.Helper()
	db := filepath.Join(t.TempDir(), "logtally.db")
	s, err := storage.Open(storage.Config{Path: db, TZ: "UTC"}, func() time.Time { return damagedStart.AddDate(0, 0, 6) })
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for hour := range 6 * 24 {
		b := tally.NewBatch()
		for i := range 60 * 110 {
			h := logtally.Hit{Time: damagedStart.Unix() + int64(hour*3600+i*6/11), PageView: true, Status: 200, Bytes: 1000,
				Visitor: rng.Uint64N(5000), Path: fmt.Appendf(nil, "/page/%d", rng.IntN(300))}
			b.Add(&h, false)
		}
		b.SetPosition("fp:a", int64(hour+1)*1000)
		if err := s.Commit(b); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if info, err := os.Stat(db); err == nil {
		t.Logf("database of %.1f MB", float64(info.Size())/1e6)
	}
	var values []damagetest.Value
	for _, bucket := range []string{"minutes", "hours", "days"} {
		vs, err := damagetest.Values(db, "sites", logtally.DefaultSite, bucket)
		if err != nil {
			t.Fatal(err)
		}
		values = append(values, vs...)
	}
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng = rand.New(rand.NewPCG(seed, 30))
	for _, i := range rng.Perm(len(values))[:20] {
		if _, err := damagetest.Overwrite(db, values[i], rng); err != nil {
			t.Fatal(err)
		}
	}
	return db
}

// TestDamagedRecordsNeverAnswer500: a daemon on a database with 20
// damaged records starts, answers every route of the API, and the ranges
// that read the damaged records, with no 500 (a series names the records
// it lacks, their points null), and /api/v1/status says that the file is
// damaged, what, and how to recover. Before, a series that read a damaged
// record answered 500 "internal error" every time, and nothing said the
// file was damaged.
func TestDamagedRecordsNeverAnswer500(t *testing.T) {
	t.Parallel()
	db := damagedDB(t)
	end := damagedStart.AddDate(0, 0, 6)
	m := start(t, func() time.Time { return end }, "run", "--db", db, "--admin-listen", "127.0.0.1:0")
	var targets []string
	for _, r := range apiRoutes() {
		if !strings.HasSuffix(r.Path, "/events") {
			targets = append(targets, strings.NewReplacer("{name}", "page").Replace(r.Path))
		}
	}
	from, to := damagedStart.Format(time.DateOnly), end.Add(-time.Second).Format(time.DateOnly)
	for _, step := range []string{"1m", "5m", "1h", "1d"} {
		targets = append(targets, "/api/v1/series?from="+from+"&to="+to+"&step="+step)
	}
	for day := damagedStart; day.Before(end); day = day.AddDate(0, 0, 1) {
		d := day.Format(time.DateOnly)
		targets = append(targets, "/api/v1/pages?from="+d+"&to="+d, "/api/v1/pages?from="+url.QueryEscape(day.Add(90*time.Minute).Format(time.RFC3339))+"&to="+d)
	}
	targets = append(targets, "/api/v1/pages?from="+from+"&to="+to, "/api/v1/pages/count?path=/page/1&path=/page/2")
	named := 0
	for _, target := range targets {
		code, body := get(t, m, target)
		if code >= 500 {
			t.Errorf("%s: %d %.300s", target, code, body)
		}
		if strings.Contains(body, `"damaged":["per-minute counts`) || strings.Contains(body, `"damaged":["hourly counts`) ||
			strings.Contains(body, `"damaged":["daily counts`) {
			named++
		}
	}
	if named == 0 {
		t.Error("no answer named a damaged record")
	}
	var status string
	poll.Until(t, "the status to say the file is damaged", func() bool {
		_, status = get(t, m, "/api/v1/status")
		return strings.Contains(status, `"state":"damaged"`)
	})
	for _, want := range []string{`"damage":["`, `record checksum`, `"recover":"stop logtally and run 'logtally check --db ` + db} {
		if !strings.Contains(status, want) {
			t.Errorf("status: %s\nwant %s in it", status, want)
		}
	}
}

// TestReportNamesDamagedDays: report on a file whose record of a day is
// damaged prints that day as damaged, not as a day of zeros, and says that
// the total lacks it and how to recover, in each form. Before, the day
// read as zeros and nothing said the total lacked it.
func TestReportNamesDamagedDays(t *testing.T) {
	t.Parallel()
	db := filepath.Join(t.TempDir(), "logtally.db")
	s, err := storage.Open(storage.Config{Path: db, TZ: "UTC"}, func() time.Time { return damagedStart.AddDate(0, 0, 60) })
	if err != nil {
		t.Fatal(err)
	}
	for d := range 60 { // enough days that the bucket of days has pages of its own
		b := tally.NewBatch()
		for i := range 50 {
			h := logtally.Hit{Time: damagedStart.Unix() + int64(d*86400+i*600), PageView: true, Status: 200,
				Visitor: uint64(i%7 + 1), Path: []byte("/")}
			b.Add(&h, false)
		}
		if err := s.Commit(b); err != nil {
			t.Fatal(err)
		}
	}
	// The days before the newest get their records (the newest is its hours).
	if _, err := s.Prune(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	days, err := damagetest.Values(db, "sites", logtally.DefaultSite, "days")
	if err != nil || len(days) != 59 {
		t.Fatalf("the day records: %d, %v", len(days), err)
	}
	if _, err := damagetest.Overwrite(db, days[2], rand.New(rand.NewPCG(3, 4))); err != nil {
		t.Fatal(err)
	}
	third := damagedStart.AddDate(0, 0, 2).Format(time.DateOnly)
	args := []string{"--db", db, "--tz", "UTC", "--from", damagedStart.Format(time.DateOnly),
		"--to", damagedStart.AddDate(0, 0, 5).Format(time.DateOnly)}
	for _, tt := range []struct{ flag, want string }{
		{"", third + "   damaged\n"},
		{"", "the counts of " + third},
		{"", "total            250"}, // five days of 50: the damaged one is not in it
		{"--json", `"damaged_days": [`},
		{"--csv", "day:damaged," + third + ","},
	} {
		out, err := reportOf(t, append(args, strings.Fields(tt.flag)...)...)
		if err != nil || !strings.Contains(out, tt.want) {
			t.Errorf("report %s: %v\n%s\nwant it to hold %q", tt.flag, err, out, tt.want)
		}
	}
}
