#!/usr/bin/env bash
# Replay throughput, end to end: a generated 2,000,000-line combined log is
# replayed into a new database by the logtally binary, RUNS times (default 3).
# The target is 1,500,000 lines/s on a 2-core machine. Each run also prints
# the CPU time it used: on a shared machine the wall-clock rate depends on
# the neighbours, the CPU time much less.
#
#   bench/replay.sh                 # LINES=2000000 RUNS=3
#   LINES=500000 RUNS=1 bench/replay.sh
#
# For a profile, run the same replay as a Go benchmark:
#   go test -run '^$' -bench Replay -benchtime 1x -cpuprofile cpu.out ./cmd/logtally
#   go tool pprof -top cpu.out
set -euo pipefail
cd "$(dirname "$0")/.."
lines=${LINES:-2000000}
runs=${RUNS:-3}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT

go build -o "$dir/logtally" ./cmd/logtally
go build -o "$dir/loggen" ./cmd/loggen
"$dir/loggen" -seed 1 -lines "$lines" -step 100ms -hosts 5000 -paths 200 >"$dir/access.log"
echo "input: $lines lines, $(stat -c %s "$dir/access.log") bytes; $(nproc) cores; $(go version | cut -d' ' -f3)"
TIMEFORMAT="cpu: %Us user + %Ss system in %Rs wall"
for _ in $(seq "$runs"); do
  rm -f "$dir/db"
  { time "$dir/logtally" replay --db "$dir/db" "$dir/access.log"; } 2>&1
done
echo "load: $(cut -d' ' -f1-3 /proc/loadavg)"
