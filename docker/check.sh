#!/usr/bin/env bash
# What can be checked of the image without a container engine (.ci/run runs it):
#  1. a scratch directory holding exactly what the Dockerfile's build stage copies builds the product
#     (a manifest that names a path the Dockerfile does not copy fails here, as `docker build` would);
#  2. every file the final stage copies from the context exists;
#  3. the image's PUSHGATE_* variables and compose.yaml's are configuration keys with valid values
#     (Tests/GatewayTests/ContainerFilesTests.swift, run by `swift test`).
# Usage: docker/check.sh  (about as long as a debug build of the product from nothing)
set -euo pipefail
cd "$(dirname "$0")/.."
SCRATCH=$(mktemp -d)
trap 'rm -rf "$SCRATCH"' EXIT

# "stage src dst" for each COPY without --from (instructions joined across continuation lines).
copies=$(sed -e ':a' -e '/\\$/N; s/\\\n//; ta' docker/Dockerfile | awk '
  /^FROM / { stage++ }
  /^COPY / && $2 !~ /^--from/ { print stage, $2, $3 }')
[ -n "$copies" ] || { echo "docker/check.sh: no COPY found in docker/Dockerfile" >&2; exit 1; }
while read -r stage src dst; do
  [ -e "$src" ] || { echo "docker/check.sh: docker/Dockerfile copies $src, which does not exist" >&2; exit 1; }
  [ "$stage" = 1 ] || continue
  mkdir -p "$SCRATCH/$(dirname "$dst")"
  cp -R "$src" "$SCRATCH/$dst"
done <<< "$copies"

echo "docker/check.sh: building the product from the build stage's copies only ($(ls "$SCRATCH" | xargs))" >&2
swift build --package-path "$SCRATCH" --product pushgate 2>&1 | grep -v "^\[\|^warning: \|CMakeLists.txt$" >&2 \
  || true
BIN="$(swift build --package-path "$SCRATCH" --show-bin-path)/pushgate"
[ -x "$BIN" ] || { echo "docker/check.sh: the product did not build from what docker/Dockerfile copies" >&2; exit 1; }
"$BIN" config --config Config/pushgate.yaml > /dev/null
echo "docker/check.sh: the image's build stage builds pushgate" >&2
