package report

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/logtally/logtally"
)

// Write writes the report in format: Table, JSON or CSV.
func (r *Report) Write(w io.Writer, format string) error {
	switch format {
	case JSON:
		return r.writeJSON(w)
	case CSV:
		return r.writeCSV(w)
	}
	return r.writeTable(w)
}

var classes = [5]string{"1xx", "2xx", "3xx", "4xx", "5xx"}

// writeTable writes the report as aligned columns for a terminal: bytes in
// human units, a day not held as "not kept".
func (r *Report) writeTable(w io.Writer) error {
	fmt.Fprintf(w, "%s to %s (%s), site %s\n\n", day(r.From), day(r.To), r.Zone, r.Site)
	if err := r.writeDays(w); err != nil {
		return err
	}
	fmt.Fprintf(w, "\ntop pages (page views, %s)\n", exactness(r.PagesExact, r.PagesKeptFrom))
	if err := writeCounts(w, r.Pages); err != nil {
		return err
	}
	for _, c := range r.Counters {
		fmt.Fprintf(w, "\ncounter %s: %s lines, %s visitors (sum of days); top keys (%s)\n", c.Name, num(c.Lines), num(c.Visitors),
			exactness(c.Exact, time.Time{}))
		if err := writeCounts(w, c.Keys); err != nil {
			return err
		}
	}
	for _, c := range r.Breakdowns {
		fmt.Fprintf(w, "\nbreakdown %s: %s %s; top keys (%s)\n", c.Name, num(c.Lines), c.Counts, exactness(c.Exact, time.Time{}))
		if err := writeCounts(w, c.Keys); err != nil {
			return err
		}
	}
	fmt.Fprintln(w, "\nVisitors are counted per day and estimated (HyperLogLog, standard error 0.8%); the total is the sum of the days':\n"+
		"one who came on several days counts once a day.")
	if !r.KeptFrom.IsZero() {
		fmt.Fprintf(w, "Daily counts before %s are not kept (--keep-days): those days count in no row above, nor in the total\n"+
			"(the top pages are kept by day as long as hours, --keep-hours).\n", day(r.KeptFrom))
	}
	if damaged := r.DamagedDays(); len(damaged) > 0 {
		fmt.Fprintf(w, "The database file is damaged: the counts of %s could not be read, and the total lacks them.\n"+
			"Run logtally check on the file, and see \"A damaged file\" in docs/operations.md to recover.\n", strings.Join(damaged, ", "))
	}
	return nil
}

// DamagedDays returns the days whose stored counts could not be read.
func (r *Report) DamagedDays() []string {
	var out []string
	for _, d := range r.Days {
		if d.Damaged {
			out = append(out, day(d.Date))
		}
	}
	return out
}

// writeDays writes the table of the days and their total.
func (r *Report) writeDays(w io.Writer) error {
	var table bytes.Buffer
	tw := tabwriter.NewWriter(&table, 0, 0, 2, ' ', tabwriter.AlignRight)
	// Cells are aligned right, as numbers read best; the first column is
	// padded to the width of a date, so that it reads from the left.
	fmt.Fprintf(tw, "%-10s\trequests\tpage views\tvisitors\t%s\tbytes\t\n", "day", strings.Join(classes[:], "\t"))
	for _, d := range r.Days {
		fmt.Fprintf(tw, "%s\t%s\n", day(d.Date), tableRow(d.Row))
	}
	fmt.Fprintf(tw, "%-10s\t%s\n", "total", tableRow(r.Total))
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, line := range strings.Split(strings.TrimSuffix(table.String(), "\n"), "\n") {
		// Less the padding of the first column, and of the empty cells of
		// a day not kept.
		fmt.Fprintln(w, strings.TrimRight(strings.TrimPrefix(line, "  "), " "))
	}
	return nil
}

// exactness says whether counts are exact, and from when they are kept
// when not from the first day.
func exactness(exact bool, keptFrom time.Time) string {
	s := "exact"
	if !exact {
		s = "not exact"
	}
	if !keptFrom.IsZero() {
		s += ", kept from " + day(keptFrom) + " on (--keep-hours)"
	}
	return s
}

// writeCounts writes paths, or a counter's keys, and their counts in two
// aligned columns.
func writeCounts(w io.Writer, counts []logtally.PageCount) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, p := range counts {
		fmt.Fprintf(tw, "%s\t%d\n", p.Path, p.PageViews)
	}
	return tw.Flush()
}

// tableRow is a row's cells, each ending in a tab.
func tableRow(row Row) string {
	switch {
	case !row.Held:
		return "not kept\t\t\t\t\t\t\t\t\t"
	case row.Damaged:
		return "damaged\t\t\t\t\t\t\t\t\t"
	}
	cells := []string{num(row.Requests), num(row.PageViews), num(row.Visitors)}
	for _, n := range row.Status {
		cells = append(cells, num(n))
	}
	return strings.Join(append(cells, size(row.Bytes)), "\t") + "\t"
}

// num writes n with thousands separators.
func num(n int64) string {
	s := strconv.FormatInt(n, 10)
	for i := len(s) - 3; i > 0 && s[i-1] != '-'; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// size writes a byte count in human units.
func size(n int64) string {
	const unit = 1000
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	v, suffix := float64(n), "kMGTPE"
	i := -1
	for v >= unit && i < len(suffix)-1 {
		v /= unit
		i++
	}
	return fmt.Sprintf("%.1f %cB", v, suffix[i])
}

func day(t time.Time) string { return t.Format(time.DateOnly) }

// jsonRow is a Row as JSON: null counts for a day not held.
type jsonRow struct {
	Day       string     `json:"day,omitempty"`
	Damaged   bool       `json:"damaged,omitempty"`
	Requests  *int64     `json:"requests"`
	PageViews *int64     `json:"pageviews"`
	Visitors  *int64     `json:"visitors"`
	Status    *jsonClass `json:"status"`
	Bytes     *int64     `json:"bytes"`
}

type jsonClass struct {
	C1 int64 `json:"1xx"`
	C2 int64 `json:"2xx"`
	C3 int64 `json:"3xx"`
	C4 int64 `json:"4xx"`
	C5 int64 `json:"5xx"`
}

func toJSON(date string, row Row) jsonRow {
	out := jsonRow{Day: date, Damaged: row.Damaged}
	if row.Held && !row.Damaged {
		st := row.Status
		out.Requests, out.PageViews, out.Visitors, out.Bytes = &row.Requests, &row.PageViews, &row.Visitors, &row.Bytes
		out.Status = &jsonClass{st[0], st[1], st[2], st[3], st[4]}
	}
	return out
}

// jsonBreakdown is a breakdown's section as JSON.
type jsonBreakdown struct {
	Name      string    `json:"name"`
	Counts    string    `json:"counts"` // "page views" or "requests"
	Lines     int64     `json:"lines"`
	KeysExact bool      `json:"keys_exact"`
	Keys      []jsonKey `json:"keys"`
}

// jsonCounter is a counter's section as JSON.
type jsonCounter struct {
	Name      string    `json:"name"`
	Lines     int64     `json:"lines"`
	Visitors  int64     `json:"visitors"`
	KeysExact bool      `json:"keys_exact"`
	Keys      []jsonKey `json:"keys"`
}

type jsonKey struct {
	Key   string `json:"key"`
	Count int64  `json:"count"`
}

// VisitorsSumOfDays is how the visitors of a range of days are counted, as
// a report's JSON says in total_visitors: a visitor is an address within
// one day, so the range's are the sum of its days'.
const VisitorsSumOfDays = "sum of days"

// writeJSON writes the report as one JSON object.
func (r *Report) writeJSON(w io.Writer) error {
	body := struct {
		From                string               `json:"from"`
		To                  string               `json:"to"`
		TZ                  string               `json:"tz"`
		Site                string               `json:"site"`
		KeptFrom            string               `json:"kept_from,omitempty"`
		PagesKeptFrom       string               `json:"pages_kept_from,omitempty"`
		DamagedDays         []string             `json:"damaged_days,omitempty"` // the total lacks them
		ApproximateVisitors bool                 `json:"approximate_visitors"`
		TotalVisitors       string               `json:"total_visitors"` // how the total's visitors are counted
		Total               jsonRow              `json:"total"`
		Days                []jsonRow            `json:"days"`
		PagesExact          bool                 `json:"pages_exact"`
		Pages               []logtally.PageCount `json:"pages"`
		Counters            []jsonCounter        `json:"counters,omitempty"`
		Breakdowns          []jsonBreakdown      `json:"breakdowns,omitempty"`
	}{From: day(r.From), To: day(r.To), TZ: r.Zone, Site: r.Site, ApproximateVisitors: true, DamagedDays: r.DamagedDays(),
		TotalVisitors: VisitorsSumOfDays, Total: toJSON("", r.Total), Days: []jsonRow{}, PagesExact: r.PagesExact, Pages: r.Pages}
	if !r.KeptFrom.IsZero() {
		body.KeptFrom = day(r.KeptFrom)
	}
	if !r.PagesKeptFrom.IsZero() {
		body.PagesKeptFrom = day(r.PagesKeptFrom)
	}
	for _, d := range r.Days {
		body.Days = append(body.Days, toJSON(day(d.Date), d.Row))
	}
	if body.Pages == nil {
		body.Pages = []logtally.PageCount{}
	}
	for _, c := range r.Counters {
		jc := jsonCounter{Name: c.Name, Lines: c.Lines, Visitors: c.Visitors, KeysExact: c.Exact, Keys: []jsonKey{}}
		for _, k := range c.Keys {
			jc.Keys = append(jc.Keys, jsonKey{Key: k.Path, Count: k.PageViews})
		}
		body.Counters = append(body.Counters, jc)
	}
	for _, c := range r.Breakdowns {
		jb := jsonBreakdown{Name: c.Name, Counts: c.Counts, Lines: c.Lines, KeysExact: c.Exact, Keys: []jsonKey{}}
		for _, k := range c.Keys {
			jb.Keys = append(jb.Keys, jsonKey{Key: k.Path, Count: k.PageViews})
		}
		body.Breakdowns = append(body.Breakdowns, jb)
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(body)
}

// writeCSV writes the report as one table: a row per day, the total, and a
// row per top page, told apart by the first column.
func (r *Report) writeCSV(w io.Writer) error {
	cw := csv.NewWriter(w)
	cw.Write(append([]string{"kind", "day", "path", "requests", "pageviews", "visitors"}, append(classes[:], "bytes")...))
	row := func(kind, date string, row Row) []string {
		if row.Damaged {
			kind += ":damaged" // no counts; the total lacks it
		}
		out := []string{kind, date, ""}
		if !row.Held || row.Damaged {
			return append(out, make([]string, 9)...)
		}
		out = append(out, strconv.FormatInt(row.Requests, 10), strconv.FormatInt(row.PageViews, 10), strconv.FormatInt(row.Visitors, 10))
		for _, n := range row.Status {
			out = append(out, strconv.FormatInt(n, 10))
		}
		return append(out, strconv.FormatInt(row.Bytes, 10))
	}
	for _, d := range r.Days {
		cw.Write(row("day", day(d.Date), d.Row))
	}
	cw.Write(row("total", day(r.From)+".."+day(r.To), r.Total))
	for _, p := range r.Pages {
		cw.Write([]string{"page", "", p.Path, "", strconv.FormatInt(p.PageViews, 10), "", "", "", "", "", "", ""})
	}
	// A counter's rows: its total (requests: the lines it counted), then
	// its top keys in the path column (pageviews: the key's count).
	for _, c := range r.Counters {
		cw.Write([]string{"counter:" + c.Name, "", "", strconv.FormatInt(c.Lines, 10), "", strconv.FormatInt(c.Visitors, 10), "", "", "", "", "", ""})
		for _, k := range c.Keys {
			cw.Write([]string{"counter:" + c.Name, "", k.Path, "", strconv.FormatInt(k.PageViews, 10), "", "", "", "", "", "", ""})
		}
	}
	// A breakdown's rows, as a counter's: its total, then its top keys.
	for _, c := range r.Breakdowns {
		cw.Write([]string{"breakdown:" + c.Name, "", "", strconv.FormatInt(c.Lines, 10), "", "", "", "", "", "", "", ""})
		for _, k := range c.Keys {
			cw.Write([]string{"breakdown:" + c.Name, "", k.Path, "", strconv.FormatInt(k.PageViews, 10), "", "", "", "", "", "", ""})
		}
	}
	cw.Flush()
	return cw.Error()
}
