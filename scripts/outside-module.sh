#!/usr/bin/env bash
# Builds and runs a tiny module outside this repository against the checkout, as
# README's "Install" tells a newcomer to: `go mod edit -replace` onto a local
# clone (README's other way, `go work use`, is not exercised here: offline, a
# workspace asks for modules the module cache does not hold). Offline: it needs only the module cache that
# `go mod download` in the checkout fills (GOPROXY=off). Where a newcomer runs
# `go get github.com/gdattn/gdattn` (which fetches the dependencies' requirements
# from the proxy), the script copies the checkout's requirements into the new
# go.mod instead. Usage: bash scripts/outside-module.sh
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export GOPROXY=off GOFLAGS=-mod=mod GONOSUMDB='*' GOSUMDB=off
unset GOWORK

# newmod writes go.mod and go.sum of module example.com/hello in $1, requiring
# gdattn at a placeholder version and the checkout's own requirements.
newmod() {
  { echo "module example.com/hello"; sed '1d' "$root/go.mod"; echo; echo "require github.com/gdattn/gdattn v0.0.0"; } > "$1/go.mod"
  cp "$root/go.sum" "$1/go.sum"
}

write_main() {
  cat > "$1/main.go" <<'GO'
package main

import (
	"fmt"

	"github.com/gdattn/gdattn/gd"
	"github.com/gdattn/gdattn/graph"
)

func main() {
	s, err := graph.NewScope(graph.Float64, 1)
	if err != nil {
		panic(err)
	}
	m, err := gd.NewModel(s, gd.Config{D: 10, DPrime: 5, C: 25, N: 10}, 4)
	if err != nil {
		panic(err)
	}
	fmt.Println("gd model with", len(m.Params()), "parameters built from the checkout")
}
GO
}

echo "== go mod edit -replace"
mkdir -p "$tmp/replace" && cd "$tmp/replace"
newmod .
go mod edit -replace=github.com/gdattn/gdattn="$root"
write_main .
go run .

