#!/usr/bin/env bash
# scripts/test.sh — every test agentd has, from a fresh Debian machine.
#
#   scripts/test.sh            everything, as CI runs it: gofmt/vet, all Go tests including the
#                              integration tests against the real Ollama server with the
#                              project's generated tiny model, and a short fuzz run of the
#                              model-reply parser. With CI=true the real-Ollama tests must run.
#   scripts/test.sh --quick    the inner loop: no real Ollama (no build, its tests skip), go
#                              test -short, no fuzz run. Not allowed with CI=true.
#   scripts/test.sh [--quick] GO-TEST-FLAGS...   e.g. -run TestContainmentCorpus: passed to go test.
#
# The web console's browser tests save screenshots of each page in $AGENTD_LOGS/web-screenshots.
#
# Installs what the tests need (Go, Debian build packages, the Ollama v0.17.4 build — cached
# after the first run), quietly: their output goes to $AGENTD_LOGS (~/.cache/agentd/logs) and
# is shown only when an install fails. Tests report a line per package as it finishes, a
# heartbeat every 30 s naming the tests still running (never 30 s without a line), and every
# failure in full at the end (scripts/testsum). The raw go test -json stream is kept in
# $AGENTD_LOGS/go-test.json. AGENTD_TEST_JOBS (default 4) is go test's -p.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib.sh

quick=false
if [ "${1:-}" = --quick ]; then
	quick=true; shift
	[ "${CI:-}" != true ] || die "--quick skips the real-Ollama tests, and CI=true runs everything: drop --quick (or CI=true)"
fi
start=$(date +%s)
mkdir -p "$AGENTD_LOGS"
: >"$AGENTD_LOGS/install.log"

ensure_go
ensure_build_deps
ensure_sandbox # without it the sandbox tests skip
# The web console's browser tests drive Debian's Chromium (daemon/web); under CI=true
# they fail without it, elsewhere they skip.
command -v chromium >/dev/null 2>&1 || apt_install chromium || say "chromium not installed: the web console's browser tests will skip"
# The newcomer walk-through (scripts/walkthrough_test.go) types into real terminals: tmux panes.
command -v tmux >/dev/null 2>&1 || apt_install tmux || say "tmux not installed: the newcomer walk-through test will fail"
# Screenshots the browser tests take, and the walk-through's transcript, land here.
mkdir -p "$AGENTD_LOGS/web-screenshots"
export AGENTD_LOGS
say "go $(go env GOVERSION); downloading modules"
quietly install.log go mod download

if $quick; then
	# A path that is not executable makes ollamatest.Binary fail, so the real-Ollama tests
	# skip the way they do on a machine without Ollama (they fail only under CI=true).
	say "--quick: no real Ollama; its tests skip"
	export AGENTD_OLLAMA_BIN="/nonexistent/ollama-off-for-test.sh--quick"
else
	# ollama.sh says how its build goes; the compiler's and apt's output goes to
	# $AGENTD_LOGS/ollama.log, and its end is shown if the build fails.
	if AGENTD_OLLAMA_BIN=$(bash scripts/ollama.sh); then
		export AGENTD_OLLAMA_BIN
	else
		[ "${CI:-}" = true ] && die "could not build Ollama (its output is above); the integration tests cannot run"
		say "no Ollama binary (its build output is above): integration tests will skip"
		export AGENTD_OLLAMA_BIN=
	fi
fi

say "gofmt and go vet"
unformatted=$(gofmt -l $(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))
[ -z "$unformatted" ] || die "gofmt needed on: $unformatted"
# vet compiles what changed since the last run: on a busy machine that can take a minute.
beating "go vet ./..." go vet ./... || die "go vet found problems (above): fix them and run again"

prepare() { go build -o "$AGENTD_LOGS/testsum" ./scripts/testsum && go list ./... >"$AGENTD_LOGS/packages.txt"; }
beating "go build ./scripts/testsum; go list ./..." prepare || die "could not build scripts/testsum or list the packages (above)"
short=(); $quick && short=(-short)
# pipefail: the pipeline fails when go test fails, and testsum fails on any failed test too.
# go test starts packages in the order named (each waits for the one before it to start),
# -p at a time: naming the slowest first lets the many short ones run beside them, not after.
slow=(github.com/agentd/agentd/daemon/integration github.com/agentd/agentd/bots/discord
	github.com/agentd/agentd/internal/fakediscord github.com/agentd/agentd/daemon/agent
	github.com/agentd/agentd/bots/slack github.com/agentd/agentd/daemon/web)
mapfile -t rest < <(grep -vxF -f <(printf '%s\n' "${slow[@]}") "$AGENTD_LOGS/packages.txt")
# Said last before testsum starts: its silence clock starts about here.
say "go test (unit, loop$($quick || echo ' and real-Ollama integration') tests): a line per package as it ends"
# -p: most packages wait (the fakes' real deadlines and rate limits, timers) rather than
# compute — bots/discord runs ~55 s on ~1.5 s of CPU — so 4 test binaries at a time keep
# 2 cores busy where go test's default of one per core leaves them idle.
go test -json -count=1 -timeout 40m -p "${AGENTD_TEST_JOBS:-4}" "${short[@]}" "$@" "${slow[@]}" "${rest[@]}" 2>&1 |
	"$AGENTD_LOGS/testsum" -heartbeat "${AGENTD_HEARTBEAT:-30s}" -json "$AGENTD_LOGS/go-test.json" ||
	die "tests failed: each failure is printed in full above (raw events: $AGENTD_LOGS/go-test.json)"

if ! $quick; then
	# A count, not a duration: Go 1.26's fuzz coordinator can fail a run that found nothing
	# when a -fuzztime deadline races a busy worker (golang/go#75804, fixed in Go 1.27).
	execs=${AGENTD_FUZZ_EXECS:-100000}
	say "fuzzing the model-reply parser for $execs inputs (output: $AGENTD_LOGS/fuzz.log)"
	: >"$AGENTD_LOGS/fuzz.log"
	quietly fuzz.log go test -run '^$' -fuzz '^FuzzParseReply$' -fuzztime "${execs}x" ./daemon/llm/ ||
		die "the fuzz run failed (its output is above; a failing input is saved under daemon/llm/testdata/fuzz)"
fi

[ -f "$AGENTD_LOGS/walkthrough.txt" ] && say "newcomer walk-through transcript: $AGENTD_LOGS/walkthrough.txt"
say "all tests passed in $(( $(date +%s) - start ))s$($quick && echo ' (--quick: no real Ollama, -short, no fuzz run)')"
