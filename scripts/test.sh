#!/usr/bin/env bash
# scripts/test.sh — every test agentd has, from a fresh Debian machine.
#
# Installs what the tests need (Go, Debian build packages, the Ollama v0.17.4 build — cached
# after the first run), then runs gofmt/vet checks, all Go tests including the integration
# tests against the real Ollama server with the project's generated tiny model, and a short
# fuzz run of the model-reply parser. With CI=true the integration tests must run, never skip.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib.sh

ensure_go
ensure_build_deps
command -v bwrap >/dev/null 2>&1 || apt_install bubblewrap || say "bubblewrap not installed: sandbox tests will skip"
say "go $(go env GOVERSION); downloading modules"
go mod download

say "making sure the Ollama server binary exists"
AGENTD_OLLAMA_BIN=$(bash scripts/ollama.sh) || {
	[ "${CI:-}" = true ] && die "could not build Ollama; the integration tests cannot run"
	say "no Ollama binary: integration tests will skip"; AGENTD_OLLAMA_BIN=
}
export AGENTD_OLLAMA_BIN

say "gofmt and go vet"
unformatted=$(gofmt -l $(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))
[ -z "$unformatted" ] || die "gofmt needed on: $unformatted"
go vet ./...

say "go test (unit, loop and integration tests)"
go test -count=1 -timeout 40m "$@" ./...

# A count, not a duration: Go 1.26's fuzz coordinator can fail a run that found nothing
# when a -fuzztime deadline races a busy worker (golang/go#75804, fixed in Go 1.27).
say "fuzzing the model-reply parser for ${AGENTD_FUZZ_EXECS:-100000} inputs"
go test -run '^$' -fuzz '^FuzzParseReply$' -fuzztime "${AGENTD_FUZZ_EXECS:-100000}x" ./daemon/llm/

say "all tests passed"
