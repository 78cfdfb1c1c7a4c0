#!/bin/sh
# Builds the Dockerfile's image with podman (or buildah) and checks what
# the Dockerfile's test (go test ./deploy) cannot see in its text:
#
#   - /data in the built image belongs to the user the image runs as;
#   - with podman, logtally run as that user, on a read-only root file
#     system, keeps its database in a fresh volume at /data, made as
#     Docker makes one (a copy of the image's /data, owner and mode).
#
#   deploy/check-image.sh
#
# Where neither tool is installed, it does not run as root, or a base image
# can be neither found locally nor pulled (no registry access), it prints
# "skipped: ..." and exits 0; any other failure exits non-zero. .ci/run
# runs it.
set -eu
cd "$(dirname "$0")/.."

if command -v podman >/dev/null 2>&1; then
  tool=podman
elif command -v buildah >/dev/null 2>&1; then
  tool=buildah
else
  echo "skipped: neither podman nor buildah is installed (apt-get install podman): the image was not built"
  exit 0
fi

if [ "$(id -u)" -ne 0 ]; then
  echo "skipped: the check needs root (to mount the image, and to make its volume as Docker would): the image was not built"
  exit 0
fi

has_image() {
  if [ "$tool" = podman ]; then podman image exists "$1"; else buildah inspect --type image "$1" >/dev/null 2>&1; fi
}

for base in $(awk 'toupper($1) == "FROM" { print $2 }' Dockerfile); do
  has_image "$base" && continue
  if ! out=$($tool pull -q "$base" 2>&1); then
    echo "skipped: base image $base is not reachable ($(printf '%s\n' "$out" | tail -n 1)): the image was not built"
    exit 0
  fi
done

tag=localhost/logtally:check-$$
vol=
cleanup() {
  if [ "$tool" = podman ]; then podman image unmount "$tag" >/dev/null 2>&1 || true; fi
  $tool rmi -f "$tag" >/dev/null 2>&1 || true
  if [ -n "$vol" ]; then rm -rf "$vol"; fi
}
trap cleanup EXIT

# Can this machine run a build step at all? A sandbox may forbid what the
# container runtime needs (cgroups, raising rlimits): that is no fault of
# the Dockerfile.
vol=$(mktemp -d)
printf 'FROM %s\nRUN true\n' "$(awk 'toupper($1) == "FROM" { print $2; exit }' Dockerfile)" >"$vol/Containerfile"
if ! out=$($tool build --layers=false -q -t "$tag" "$vol" 2>&1); then
  echo "skipped: $tool cannot run a build step on this machine ($(printf '%s\n' "$out" | grep -m 1 -i 'error' | cut -c 1-200)): the image was not built"
  exit 0
fi
rm -rf "$vol"
vol=

# --layers=false: no intermediate images of the build stage left behind.
$tool build --layers=false --build-arg VERSION=check -t "$tag" .

# The owner and mode of /data in the image, against the user it runs as.
stat_data() {
  stat -c '%u:%g %a' "$1/data" 2>/dev/null || echo "no-one 0"
}
if [ "$tool" = podman ]; then
  user=$(podman image inspect --format '{{.Config.User}}' "$tag")
  data=$(stat_data "$(podman image mount "$tag")")
else
  user=$(buildah inspect --type image --format '{{.OCIv1.Config.User}}' "$tag")
  ctr=$(buildah from "$tag")
  data=$(stat_data "$(buildah mount "$ctr")")
  buildah rm "$ctr" >/dev/null
fi
owner=${data% *} mode=${data#* }
if [ "$owner" = no-one ]; then
  echo "the image has no /data of its own (VOLUME makes a root-owned one at run time), but runs as $user: a fresh volume there cannot hold the database" >&2
  exit 1
fi
if [ "$owner" != "$user" ]; then
  echo "/data in the image is owned by $owner, but the image runs as $user: a fresh volume there cannot hold the database" >&2
  exit 1
fi
echo "/data in the image is owned by $owner (mode $mode), the user the image runs as"

if [ "$tool" != podman ]; then
  echo "skipped: running the image needs podman (only buildah is installed)"
  exit 0
fi
# A fresh volume as Docker makes one for -v logtally-data:/data: a copy of
# the image's /data, its owner and mode. (Podman would instead hand a fresh
# named volume to the container's user, hiding the very mistake checked
# here, so the volume is a directory made the Docker way.) logtally, as the
# image's user on a read-only root file system, must keep its database there.
vol=$(mktemp -d)
chown "$owner" "$vol"
chmod "$mode" "$vol"
podman run --rm --network none --read-only -v "$vol":/data -v "$PWD/testdata":/logs:ro "$tag" replay /logs/sample.log
report=$(podman run --rm --network none --read-only -v "$vol":/data "$tag" report 2>/dev/null)
printf '%s\n' "$report" | grep -Eq '^total +[1-9]' || {
  echo "the database in the volume holds no requests; report printed:" >&2
  printf '%s\n' "$report" >&2
  exit 1
}
echo "logtally, run as $user, kept its database in a fresh volume: $(stat -c '%u:%g' "$vol/logtally.db") $(printf '%s\n' "$report" | grep -E '^total')"
