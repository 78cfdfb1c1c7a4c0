package report

import (
	"bytes"
	"errors"
	"flag"
	"github.com/logtally/logtally/internal/golden"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/logtally/logtally"
)

var update = flag.Bool("update", false, "rewrite the golden files of the formats")

// store is a Source double: days with their counts, in a zone.
type store struct {
	loc      *time.Location
	days     map[string]logtally.Point // by day, 2006-01-02
	keptFrom time.Time
	pages    logtally.PageRange
	err      error // of every read but Newest
}

func (s *store) Location() *time.Location { return s.loc }

func (s *store) Newest() (time.Time, bool, error) {
	var newest time.Time
	for d := range s.days {
		t, _ := time.ParseInLocation(time.DateOnly, d, s.loc)
		if t.After(newest) {
			newest = t.Add(12 * time.Hour)
		}
	}
	return newest, !newest.IsZero(), nil
}

func (s *store) Series(from, to time.Time, step time.Duration) (logtally.Series, error) {
	out := logtally.Series{Step: step, KeptFrom: s.keptFrom}
	for d := from; !d.After(to); d = d.AddDate(0, 0, 1) {
		p := s.days[d.Format(time.DateOnly)]
		p.Time = d
		out.Points = append(out.Points, p)
	}
	return out, s.err
}

func (s *store) Totals(from, to time.Time) (logtally.Counts, error) {
	var c logtally.Counts
	for d := from; !d.After(to); d = d.AddDate(0, 0, 1) {
		p := s.days[d.Format(time.DateOnly)]
		c.Requests += p.Requests
		c.PageViews += p.PageViews
		c.Visitors += p.Visitors
		c.Bytes += p.Bytes
		for i := range c.Status {
			c.Status[i] += p.Status[i]
		}
	}
	return c, s.err
}

func (s *store) Pages(from, to time.Time, limit int) (logtally.PageRange, error) {
	p := s.pages
	p.Pages = p.Pages[:min(limit, len(p.Pages))]
	return p, s.err
}

// week is a store whose lines start on 2026-11-18 and end on 2026-11-21,
// in Paris.
func week(t *testing.T) *store {
	t.Helper()
	paris, err := time.LoadLocation("Europe/Paris")
	if err != nil {
		t.Skip(err)
	}
	return &store{loc: paris, days: map[string]logtally.Point{
		"2026-11-18": {Requests: 10, PageViews: 6, Visitors: 3, Status: [5]int64{0, 8, 1, 1, 0}, Bytes: 12_000},
		"2026-11-19": {Requests: 20, PageViews: 12, Visitors: 5, Status: [5]int64{0, 18, 0, 2, 0}, Bytes: 1_500_000},
		"2026-11-21": {Requests: 1234567, PageViews: 5, Visitors: 2, Status: [5]int64{0, 1234560, 0, 0, 7}, Bytes: 999},
	}, pages: logtally.PageRange{Exact: true, Pages: []logtally.PageCount{{Path: "/", PageViews: 15}, {Path: "/docs/1", PageViews: 8}}}}
}

func dates(r *Report) []string {
	var out []string
	for _, d := range r.Days {
		out = append(out, day(d.Date))
	}
	return out
}

func TestBuildStartsAtTheFirstDayHeld(t *testing.T) {
	r, err := Build(week(t), DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	// Seven days end with the newest line's, less the empty ones before
	// the first line; an empty day after it stays.
	if got, want := strings.Join(dates(r), " "), "2026-11-18 2026-11-19 2026-11-20 2026-11-21"; got != want {
		t.Errorf("days %s, want %s", got, want)
	}
	if day(r.From) != "2026-11-18" || day(r.To) != "2026-11-21" || r.Zone != "Europe/Paris" {
		t.Errorf("from %s to %s in %s", day(r.From), day(r.To), r.Zone)
	}
	if r.Total.Requests != 1234597 || !r.Total.Held || len(r.Pages) != 2 || !r.PagesExact {
		t.Errorf("total %+v, pages %v (exact %t)", r.Total, r.Pages, r.PagesExact)
	}
}

func TestBuildFromKeepsEmptyDays(t *testing.T) {
	cfg := DefaultConfig()
	cfg.From, cfg.To = "2026-11-16", "2026-11-19"
	r, err := Build(week(t), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := strings.Join(dates(r), " "), "2026-11-16 2026-11-17 2026-11-18 2026-11-19"; got != want {
		t.Errorf("days %s, want %s: the days asked for, empty or not", got, want)
	}
}

func TestBuildDaysNotKept(t *testing.T) {
	src := week(t)
	src.keptFrom = time.Date(2026, 11, 19, 0, 0, 0, 0, src.loc)
	r, err := Build(src, DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	// Nothing is left out before kept_from: the days there are not empty,
	// they are not known.
	if len(r.Days) != 7 || day(r.Days[3].Date) != "2026-11-18" || r.Days[3].Held || !r.Days[4].Held ||
		!r.KeptFrom.Equal(src.keptFrom) {
		t.Errorf("days %v, held %t %t, want all seven, 2026-11-18 not held, 2026-11-19 held", dates(r), r.Days[3].Held, r.Days[4].Held)
	}
}

func TestBuildErrors(t *testing.T) {
	src := week(t)
	for _, tt := range []struct {
		name string
		cfg  Config
		want string
	}{
		{"from after to", Config{From: "2026-11-20", To: "2026-11-19", Pages: 10}, "--from 2026-11-20 is after --to 2026-11-19"},
		{"too many days", Config{From: "1990-01-01", Pages: 10}, "more than 10000 days"},
		{"bad day", Config{To: "21/11/2026", Pages: 10}, `--to "21/11/2026": want a day such as 2015-05-17`},
	} {
		if _, err := Build(src, tt.cfg); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: %v, want %q", tt.name, err, tt.want)
		}
	}
	if _, err := Build(&store{loc: time.UTC}, DefaultConfig()); !errors.Is(err, ErrEmpty) {
		t.Errorf("an empty store: %v, want ErrEmpty", err)
	}
	failing := errors.New("read: input/output error")
	if _, err := Build(week(t), DefaultConfig(), CounterSource{Name: "clicks", Source: &store{loc: time.UTC, err: failing}}); !errors.Is(err, failing) ||
		!strings.HasPrefix(err.Error(), "counter clicks: ") {
		t.Errorf("a counter's store failing: %v, want it wrapped with the counter's name", err)
	}
}

// TestFormats writes one report in each format and compares it with
// testdata/report.FORMAT.golden (go test ./report -update rewrites them).
func TestFormats(t *testing.T) {
	src := week(t)
	src.keptFrom = time.Date(2026, 11, 16, 0, 0, 0, 0, src.loc)
	src.days["2026-11-20"] = logtally.Point{Damaged: true} // a record the file lost
	clicks := &store{loc: src.loc, days: map[string]logtally.Point{"2026-11-21": {Requests: 40, Visitors: 9}},
		pages: logtally.PageRange{Pages: []logtally.PageCount{{Path: "42", PageViews: 30}, {Path: "7", PageViews: 10}}}}
	cfg := DefaultConfig()
	cfg.Site = "blog.example.org"
	r, err := Build(src, cfg, CounterSource{Name: "clicks", Source: clicks})
	if err != nil {
		t.Fatal(err)
	}
	for _, format := range []string{Table, JSON, CSV} {
		t.Run(format, func(t *testing.T) {
			var got bytes.Buffer
			if err := r.Write(&got, format); err != nil {
				t.Fatal(err)
			}
			golden.Check(t, filepath.Join("testdata", "report."+format+".golden"), got.Bytes(), *update)
		})
	}
}
