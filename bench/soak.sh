#!/usr/bin/env bash
# bench/soak.sh: bench/soak from any directory; every flag is passed on.
#
#   bench/soak.sh                     # 10 minutes (run as root for the disk-full fault)
#   bench/soak.sh -duration 60s       # what CI runs
#   bench/soak.sh -seed 42 -keep      # repeat a run's decisions and keep its files
#   bench/soak.sh -h                  # every flag
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v go >/dev/null 2>&1 && [ -x /usr/local/go/bin/go ]; then
  export PATH="/usr/local/go/bin:$PATH"
fi
exec go run ./bench/soak "$@"
