package main

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"testing"
	"time"
)

// timedFormat is nginx's combined format with $request_time after it.
const timedFormat = `$remote_addr - $remote_user [$time_local] "$request" $status $body_bytes_sent ` +
	`"$http_referer" "$http_user_agent" $request_time`

// TestRequestTimeBreakdown: with a format that logs $request_time, replay
// counts every request (page views, assets and crawlers alike) in the
// bucket of how long it took, which report lists; brute force agrees.
func TestRequestTimeBreakdown(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	log, db := filepath.Join(dir, "access.log"), filepath.Join(dir, "db")
	day := time.Date(2026, 11, 20, 0, 0, 0, 0, time.UTC)
	rng := rand.New(rand.NewPCG(5, 6))
	want := map[string]int64{}
	var lines []string
	for i := range 2000 {
		secs := []float64{0.003, 0.04, 0.1, 0.101, 0.7, 3.2, 12.5}[rng.IntN(7)]
		bucket := map[float64]string{0.003: "10ms", 0.04: "50ms", 0.1: "100ms", 0.101: "250ms", 0.7: "1s", 3.2: "5s", 12.5: "more"}[secs]
		want[bucket]++
		path, agent := fmt.Sprintf("/p%d", i%9), browser
		if i%4 == 0 {
			path = "/app.css"
		}
		if i%5 == 0 {
			agent = "curl/8.5.0"
		}
		lines = append(lines, fmt.Sprintf(`192.0.2.%d - - [%s] "GET %s HTTP/1.1" 200 512 "-" "%s" %.3f`, i%50,
			day.Add(time.Duration(i)*time.Minute/2).Format("02/Jan/2006:15:04:05 -0700"), path, agent, secs))
	}
	appendLines(t, log, lines...)
	runCommand(t, "replay", "--db", db, "--tz", "UTC", "--format", timedFormat, "--breakdowns", "request-time", log)
	out := runCommand(t, "report", "--db", db, "--tz", "UTC", "--json", "--from", day.Format(time.DateOnly),
		"--to", day.Format(time.DateOnly), "--breakdowns", "request-time")
	var body struct {
		Breakdowns []struct {
			Name string
			Keys []struct {
				Key   string
				Count int64
			}
		}
	}
	if err := json.Unmarshal([]byte(out), &body); err != nil || len(body.Breakdowns) != 1 {
		t.Fatalf("%v: %s", err, out)
	}
	got := map[string]int64{}
	for _, k := range body.Breakdowns[0].Keys {
		got[k.Key] = k.Count
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("request-time of the day = %v\nbrute force          = %v", got, want)
	}
}
