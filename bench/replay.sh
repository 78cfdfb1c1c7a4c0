#!/usr/bin/env bash
# Replay throughput, end to end: a generated 2,000,000-line combined log is
# replayed into a new database by the logtally binary, RUNS times (default 3),
# on all cores. Then, once each, the scaling table: the same replay pinned to
# 1, 2, 4 and all cores (taskset -c, GOMAXPROCS), side by side with `wc -l` on
# the same file and GoAccess (when installed) on its first 1,000,000 lines.
# The target is 3,000,000 lines/s on a 2-core machine. Each run also prints
# the CPU time it used: on a shared machine the wall-clock rate depends on
# the neighbours, the CPU time much less.
#
#   bench/replay.sh                 # LINES=2000000 RUNS=3
#   LINES=500000 RUNS=1 SCALING=0 bench/replay.sh
#
# For a profile, run the same replay as a Go benchmark:
#   go test -run '^$' -bench Replay -benchtime 1x -cpuprofile cpu.out ./cmd/logtally
#   go tool pprof -top cpu.out
set -euo pipefail
cd "$(dirname "$0")/.."
lines=${LINES:-2000000}
runs=${RUNS:-3}
scaling=${SCALING:-1}
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

if [ "$scaling" = 1 ]; then
  rate() { # rate N START END: lines/s
    echo "$1 / ($3 - $2)" | bc -l | xargs printf '%.0f'
  }
  echo
  echo "| what | cores | lines/s |"
  echo "|---|---:|---:|"
  cat "$dir/access.log" >/dev/null # page cache warm
  s=$(date +%s.%N)
  wc -l "$dir/access.log" >/dev/null
  e=$(date +%s.%N)
  echo "| wc -l | 1 | $(rate "$lines" "$s" "$e") |"
  all=$(nproc)
  for n in $(printf '%s\n' 1 2 4 "$all" | sort -nu); do
    [ "$n" -le "$all" ] || continue
    rm -f "$dir/db"
    s=$(date +%s.%N)
    GOMAXPROCS=$n taskset -c "0-$((n - 1))" "$dir/logtally" replay --db "$dir/db" "$dir/access.log" >/dev/null
    e=$(date +%s.%N)
    echo "| logtally replay | $n | $(rate "$lines" "$s" "$e") |"
  done
  if command -v goaccess >/dev/null 2>&1; then
    slice=$((lines < 1000000 ? lines : 1000000))
    head -n "$slice" "$dir/access.log" >"$dir/slice.log"
    s=$(date +%s.%N)
    goaccess "$dir/slice.log" --log-format=COMBINED --no-global-config --no-progress -o "$dir/report.json" >/dev/null 2>&1 || true
    e=$(date +%s.%N)
    echo "| GoAccess ($slice lines) | $all | $(rate "$slice" "$s" "$e") |"
  else
    echo "(GoAccess not installed: apt-get install goaccess for its row)"
  fi
fi
echo "load: $(cut -d' ' -f1-3 /proc/loadavg)"
