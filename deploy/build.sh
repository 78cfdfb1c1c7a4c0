#!/bin/sh
# Builds a static logtally binary, without make:
#
#   deploy/build.sh [OUTPUT]      (default ./logtally, from where it is run)
#
# CGO is off, so the binary runs on any Linux of the same architecture
# (GOOS and GOARCH in the environment cross-compile); -trimpath keeps the
# build machine's paths out of it. The version is `git describe` (a tag such
# as v1.2.0, or v1.2.0-3-gabc1234 after it, "-dirty" with uncommitted
# changes), the commit is HEAD; `logtally version` prints both. Outside a git
# checkout they are "dev" and "unknown", or VERSION and COMMIT from the
# environment.
set -eu
out=${1:-logtally}
case $out in
/*) bin=$out ;;
*) bin=$(pwd)/$out ;; # a relative OUTPUT is relative to where the script was run
esac
cd "$(dirname "$0")/.."
version=${VERSION:-$(git describe --tags --always --dirty 2>/dev/null || echo dev)}
commit=${COMMIT:-$(git rev-parse --short=12 HEAD 2>/dev/null || echo unknown)}
CGO_ENABLED=0 go build -trimpath -buildvcs=false \
  -ldflags "-s -w -X main.version=$version -X main.commit=$commit" \
  -o "$bin" ./cmd/logtally
target=$(go env GOOS)/$(go env GOARCH)
if [ "$target" = "$(go env GOHOSTOS)/$(go env GOHOSTARCH)" ]; then
  # The path, not the bare name, which the shell would look up in PATH.
  echo "built $out: $("$bin" version)"
else
  echo "built $out: cross-compiled for $target"
fi
