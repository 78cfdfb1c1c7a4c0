// Command report turns the key=value lines that bench/run collects into the
// benchmark table: printed, as bench/results.json, and as bench/RESULTS.md
// with the machine it ran on and the target next to each figure.
//
// The one idea: bench/run only measures and appends key=value lines; which
// figures make a row, their units and their targets live here, in one list.
//
//	go run ./bench/report -in results.env -json bench/results.json -md bench/RESULTS.md
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
)

// row is one figure of the table.
type row struct {
	Row    string   `json:"row"`
	Metric string   `json:"metric"`
	Value  *float64 `json:"value"` // null when not measured
	Text   string   `json:"text"`  // the value as shown, or why it is missing
	Unit   string   `json:"unit"`
	Target string   `json:"target,omitempty"`
	Note   string   `json:"note,omitempty"` // a caveat on the value: a bound, a limit hit
	Met    *bool    `json:"met,omitempty"`  // null when there is no target or no value
}

// spec says how a row is read from the collected keys and judged.
type spec struct {
	row, metric, key, unit string
	op                     string // ">=", "<=", "==" or "" for no target
	target                 float64
	digits                 int
}

var specs = []spec{
	{"2", "replay: lines/s ({lines}-line combined log, new DB)", "replay_lines_per_s", "lines/s", ">=", 1_500_000, 0},
	{"2", "replay: wall time", "replay_secs", "s", "", 0, 2},
	{"2", "replay: CPU time (user + sys)", "replay_cpu_secs", "s", "", 0, 2},
	{"2", "replay: peak RSS", "replay_peak_rss_mb", "MB", "", 0, 1},
	{"2", "replay again: lines read", "replay2_lines", "lines", "==", 0, 0},
	{"2", "replay again: wall time", "replay2_secs", "s", "", 0, 2},
	{"3", "GoAccess: lines/s (same file, same format)", "goaccess_lines_per_s", "lines/s", "", 0, 0},
	{"3", "GoAccess: wall time", "goaccess_secs", "s", "", 0, 2},
	{"3", "GoAccess: CPU time (user + sys)", "goaccess_cpu_secs", "s", "", 0, 2},
	{"3", "GoAccess: peak RSS", "goaccess_peak_rss_mb", "MB", "", 0, 1},
	{"3", "replay speed / GoAccess speed", "ratio_vs_goaccess", "x", ">=", 30, 2},
	{"3", "GoAccess CPU time / replay CPU time", "ratio_cpu_vs_goaccess", "x", "", 0, 2},
	{"4", "live: writer rate achieved", "live_rate_achieved", "lines/s", "", 0, 0},
	{"4", "live: write-to-visible p50", "live_p50_ms", "ms", "", 0, 1},
	{"4", "live: write-to-visible p99", "live_p99_ms", "ms", "<=", 250, 1},
	{"4", "live: write-to-visible max", "live_max_ms", "ms", "", 0, 1},
	{"4", "live: ingest lag, most lines behind", "live_backlog_max_lines", "lines", "", 0, 0},
	{"4", "live: ingest lag, catch-up after the writer stops", "live_catchup_s", "s", "", 0, 2},
	{"5", "/api/v1/stats while ingesting, wrk saturating: requests/s", "stats_rps", "req/s", ">=", 30_000, 0},
	{"5", "/api/v1/stats while ingesting, wrk saturating: p50", "stats_wrk_p50_ms", "ms", "", 0, 3},
	{"5", "/api/v1/stats while ingesting, wrk saturating: p99", "stats_wrk_p99_ms", "ms", "", 0, 3},
	{"5", "/api/v1/stats while ingesting, fixed rate: requests/s sent", "stats_open_rate_achieved", "req/s", ">=", 30_000, 0},
	{"5", "/api/v1/stats while ingesting, fixed rate: p50", "stats_open_p50_ms", "ms", "", 0, 3},
	{"5", "/api/v1/stats while ingesting, fixed rate: p99", "stats_open_p99_ms", "ms", "<=", 2, 3},
	{"5", "/api/v1/stats while ingesting, fixed rate: requests the generator sent late", "stats_open_client_late", "", "", 0, 0},
	{"5", "/api/v1/stats while ingesting: writer rate", "stats_ingest_rate", "lines/s", "", 0, 0},
	{"6", "flood, distinct visitors: peak RSS", "flood_visitors_rss_mb", "MB", "<=", 200, 1},
	{"6", "flood, distinct visitors: lines counted / written", "flood_visitors_progress", "", "", 0, 0},
	{"6", "flood, random paths: peak RSS", "flood_paths_rss_mb", "MB", "<=", 200, 1},
	{"6", "flood, random paths: lines counted / written", "flood_paths_progress", "", "", 0, 0},
	{"7", "database file size per million lines (bench/dbsize)", "db_mb_per_million", "MB", "<=", 6, 2},
	{"7", "database on disk per million lines (allocated blocks)", "db_disk_mb_per_million", "MB", "", 0, 2},
	{"7", "database pages in use per million lines", "db_inuse_mb_per_million", "MB", "", 0, 2},
	{"7", "database file size per million lines, busier day", "db_big_mb_per_million", "MB", "<=", 6, 2},
	{"8", "event streams: clients held open (bench/events)", "events_clients", "clients", "", 0, 0},
	{"8", "event streams: status of one client more than --max-streams", "events_over_limit_status", "", "==", 503, 0},
	{"8", "event streams: events per client per second, median", "events_per_client_per_s_p50", "events/s", "", 0, 1},
	{"8", "event streams: events per client per second, fewest", "events_per_client_per_s_min", "events/s", "", 0, 1},
	{"8", "event streams: streams ended by the daemon", "events_ended_early", "", "==", 0, 0},
	{"8", "/api/v1/stats while ingesting, no stream open: p50", "events_without_p50_ms", "ms", "", 0, 3},
	{"8", "/api/v1/stats while ingesting, no stream open: p99", "events_without_p99_ms", "ms", "", 0, 3},
	{"8", "/api/v1/stats while ingesting, streams open: p50", "events_with_p50_ms", "ms", "", 0, 3},
	{"8", "/api/v1/stats while ingesting, streams open: p99", "events_with_p99_ms", "ms", "", 0, 3},
	{"8", "/api/v1/stats, no stream open: requests/s sent", "events_without_rate_achieved", "req/s", "", 0, 0},
	{"8", "/api/v1/stats, streams open: requests/s sent", "events_with_rate_achieved", "req/s", "", 0, 0},
	{"8", "daemon RSS, no stream open", "events_without_rss_mb", "MB", "", 0, 1},
	{"8", "daemon RSS, streams open", "events_with_rss_mb", "MB", "", 0, 1},
	{"8", "Go heap in use, no stream open", "events_without_heap_mb", "MB", "", 0, 1},
	{"8", "Go heap in use, streams open", "events_with_heap_mb", "MB", "", 0, 1},
	{"8", "goroutines, no stream open", "events_without_goroutines", "", "", 0, 0},
	{"8", "goroutines, streams open", "events_with_goroutines", "", "", 0, 0},
	{"8", "daemon peak RSS over the row", "events_peak_rss_mb", "MB", "", 0, 1},
	{"8", "writer rate during the row", "events_writer_rate_achieved", "lines/s", "", 0, 0},
}

// machine keys, in the order RESULTS.md shows them.
var machine = []struct{ key, label string }{
	{"date", "date"}, {"mode", "mode"}, {"commit", "commit"}, {"cpu", "CPU"}, {"cores", "cores"},
	{"mem", "memory"}, {"kernel", "kernel"}, {"go", "Go"}, {"goaccess_version", "GoAccess"},
	{"wrk_version", "wrk"}, {"daemon_flags", "extra flags of logtally run"}, {"load_start", "load average at start"}, {"load_end", "load average at end"},
	{"total_secs", "bench/run wall time (s)"},
}

func main() {
	in := flag.String("in", "", "key=value file written by bench/run")
	jsonOut := flag.String("json", "", "write results.json here")
	mdOut := flag.String("md", "", "write RESULTS.md here")
	notes := flag.String("notes", "", "Markdown file appended to RESULTS.md under Notes")
	flag.Parse()
	if err := run(*in, *jsonOut, *mdOut, *notes, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "report:", err)
		os.Exit(1)
	}
}

func run(in, jsonOut, mdOut, notes string, stdout io.Writer) error {
	kv, order, err := read(in)
	if err != nil {
		return err
	}
	rows := append(parseRows(kv, order), build(kv)...)
	sort.SliceStable(rows, func(i, j int) bool { return rows[i].Row < rows[j].Row })

	printTable(stdout, rows)
	if jsonOut != "" {
		m := map[string]string{}
		for _, k := range machine {
			m[k.key] = kv[k.key]
		}
		b, err := json.MarshalIndent(struct {
			Machine map[string]string `json:"machine"`
			Rows    []row             `json:"rows"`
			Raw     map[string]string `json:"raw"`
		}{m, rows, kv}, "", "  ")
		if err != nil {
			return err
		}
		if err := os.WriteFile(jsonOut, append(b, '\n'), 0o644); err != nil {
			return err
		}
	}
	if mdOut != "" {
		var b strings.Builder
		writeMarkdown(&b, kv, rows)
		if notes != "" {
			n, err := os.ReadFile(notes)
			if err != nil {
				return err
			}
			fmt.Fprintf(&b, "\n## Notes\n\n%s", n)
		}
		if err := os.WriteFile(mdOut, []byte(b.String()), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// read returns the key=value pairs of path; a later key wins.
func read(path string) (map[string]string, []string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	kv := map[string]string{}
	var order []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), "=")
		if !ok || strings.TrimSpace(k) == "" {
			continue
		}
		k = strings.TrimSpace(k)
		if _, seen := kv[k]; !seen {
			order = append(order, k)
		}
		kv[k] = strings.TrimSpace(v)
	}
	return kv, order, sc.Err()
}

// parseRows makes row 1 from "parse:NAME=ns allocs bytes" keys, one row per
// Go benchmark, or one "n/a" row when there are none.
func parseRows(kv map[string]string, order []string) []row {
	var rows []row
	for _, k := range order {
		name, ok := strings.CutPrefix(k, "parse:")
		if !ok {
			continue
		}
		f := strings.Fields(kv[k])
		if len(f) < 2 {
			continue
		}
		ns, _ := strconv.ParseFloat(f[0], 64)
		allocs, _ := strconv.ParseFloat(f[1], 64)
		rows = append(rows,
			row{Row: "1", Metric: "parse " + name + ": ns/line", Value: &ns, Text: f[0], Unit: "ns"},
			row{Row: "1", Metric: "parse " + name + ": allocs/line", Value: &allocs, Text: f[1], Unit: "allocs"})
	}
	if len(rows) == 0 {
		why := kv["parse_status"]
		if why == "" {
			why = "n/a"
		}
		rows = append(rows, row{Row: "1", Metric: "parse: ns/line and allocs/line (go test -bench Parse ./parser)", Text: why})
	}
	return rows
}

func build(kv map[string]string) []row {
	var rows []row
	for _, s := range specs {
		metric := strings.ReplaceAll(s.metric, "{lines}", group(kv["lines"]))
		r := row{Row: s.row, Metric: metric, Unit: s.unit, Target: target(s)}
		text := kv[s.key]
		if text == "" {
			text = "n/a"
		}
		if v, err := strconv.ParseFloat(text, 64); err == nil {
			r.Value = &v
			r.Text = strconv.FormatFloat(v, 'f', s.digits, 64)
			if s.op != "" {
				met := (s.op == ">=" && v >= s.target) || (s.op == "<=" && v <= s.target) || (s.op == "==" && v == s.target)
				r.Met = &met
			}
		} else {
			r.Text = text
		}
		r.Note = kv[s.key+"_note"]
		rows = append(rows, r)
	}
	return rows
}

func target(s spec) string {
	if s.op == "" {
		return ""
	}
	op := map[string]string{">=": "≥", "<=": "≤", "==": "="}[s.op]
	return op + " " + group(strconv.FormatFloat(s.target, 'f', -1, 64)) + " " + s.unit
}

// group puts thousands separators in the integer part of a number.
func group(s string) string {
	intPart, frac, _ := strings.Cut(s, ".")
	var b strings.Builder
	for i, c := range intPart {
		if i > 0 && (len(intPart)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if frac != "" {
		b.WriteString("." + frac)
	}
	return b.String()
}

func verdict(r row) string {
	switch {
	case r.Met == nil:
		return ""
	case *r.Met:
		return "met"
	default:
		return "MISSED"
	}
}

func shown(r row) string {
	s := r.Text
	if r.Value != nil && r.Unit != "" {
		s = group(r.Text) + " " + r.Unit
	}
	if r.Note != "" {
		s += " (" + r.Note + ")"
	}
	return s
}

func printTable(w io.Writer, rows []row) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "row\tmetric\tvalue\ttarget\t")
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", r.Row, r.Metric, shown(r), r.Target, verdict(r))
	}
	tw.Flush()
}

func writeMarkdown(b *strings.Builder, kv map[string]string, rows []row) {
	fmt.Fprintf(b, "# Benchmark results\n\n")
	fmt.Fprintf(b, "Written by `bench/run` (%s mode) on %s. Re-run with `bench/run` (about 10 minutes) or\n", kv["mode"], kv["date"])
	fmt.Fprintf(b, "`bench/run --quick` (under a minute, a smoke test whose figures are not comparable).\n")
	fmt.Fprintf(b, "How each row is measured is at the top of `bench/run`.\n\n")
	fmt.Fprintf(b, "## Machine\n\n| | |\n|---|---|\n")
	for _, m := range machine {
		if v := kv[m.key]; v != "" {
			fmt.Fprintf(b, "| %s | %s |\n", m.label, strings.ReplaceAll(v, "|", `\|`))
		}
	}
	fmt.Fprintf(b, "\n## Results\n\n| row | metric | value | target | |\n|---|---|---:|---|---|\n")
	for _, r := range rows {
		fmt.Fprintf(b, "| %s | %s | %s | %s | %s |\n", r.Row, r.Metric, shown(r), r.Target, verdict(r))
	}
}
