#!/usr/bin/env bash
# Heavy history queries, end to end: a generated busy day (2,000,000 lines,
# 200,000 clients, 100,000 paths) is replayed into a new database, then
# `logtally run` serves it on loopback while bench/heavy sends CLIENTS (200)
# concurrent one-day series, half at 5m and half at 15m, for SECONDS (20).
# It prints what the clients got (answers/s, 429s, latencies) and the
# daemon's peak RSS (VmHWM).
#
#   bench/heavy.sh
#   CLIENTS=50 SECONDS_=10 bench/heavy.sh
#   LOGTALLY=/path/to/another/logtally bench/heavy.sh   # the same load on another build
#   FLAGS="--max-heavy-queries 8" bench/heavy.sh
set -euo pipefail
cd "$(dirname "$0")/.."
clients=${CLIENTS:-200}
seconds=${SECONDS_:-20}
lines=${LINES:-2000000}
dir=$(mktemp -d)
pid=
trap '[ -n "$pid" ] && kill "$pid" 2>/dev/null; rm -rf "$dir"' EXIT

bin=${LOGTALLY:-}
if [ -z "$bin" ]; then
  go build -o "$dir/logtally" ./cmd/logtally
  bin=$dir/logtally
fi
go build -o "$dir/loggen" ./cmd/loggen
go build -o "$dir/heavy" ./bench/heavy
"$dir/loggen" -seed 1 -lines "$lines" -start 2026-11-21T00:00:00Z -step "$((86400000 / lines))ms" \
  -hosts 200000 -paths 100000 >"$dir/access.log"
"$bin" replay --db "$dir/db" --tz UTC "$dir/access.log" >/dev/null 2>&1
port=$((20000 + RANDOM % 20000))
# shellcheck disable=SC2086
"$bin" run --db "$dir/db" --tz UTC --admin-listen "127.0.0.1:$port" --window-end log ${FLAGS:-} 2>"$dir/daemon.log" &
pid=$!
for _ in $(seq 100); do
  curl -sf "127.0.0.1:$port/healthz" >/dev/null && break
  sleep 0.1
done
echo "$lines lines replayed; $(nproc) cores; $("$bin" version 2>/dev/null | head -1 || true)"
echo "idle RSS: $(grep VmRSS "/proc/$pid/status" | awk '{print $2, $3}')"
"$dir/heavy" -addr "127.0.0.1:$port" -pid "$pid" -c "$clients" -duration "${seconds}s" \
  -query '/api/v1/series?from=2026-11-21&to=2026-11-21&step=5m' \
  -query '/api/v1/series?from=2026-11-21&to=2026-11-21&step=15m'
echo "daemon log lines about heavy queries: $(grep -c 'heavy query' "$dir/daemon.log" || true)"
curl -s "127.0.0.1:$port/metrics" | grep -E '^logtally_api_heavy' || true
echo "load: $(cut -d' ' -f1-3 /proc/loadavg)"
