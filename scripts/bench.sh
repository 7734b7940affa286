#!/usr/bin/env bash
# scripts/bench.sh — the DESIGN §7 step benchmarks, with the figures printed one per line.
#
#   scripts/bench.sh             # all four
#   scripts/bench.sh overhead    # BenchmarkStepOverhead: daemon cost per step, instant fake model
#   scripts/bench.sh prompt      # BenchmarkFirstStepPrompt: first-step prompt size
#   scripts/bench.sh real        # BenchmarkStepVsBareChat: agentd step ÷ bare /api/chat (real Ollama)
#   scripts/bench.sh overhead-memory  # BenchmarkStepOverhead with 1,000 episodes and 100k memories only
#   scripts/bench.sh pending     # BenchmarkRestartPending: 10,000 agents awaiting decisions, the real
#                                # binary restarted on them: restart until all listed, RSS (~5 min to seed)
#   scripts/bench.sh web         # the web console (daemon/web): BenchmarkAgentsPage1000 (ms and CPU
#                                # ms per page, 1,000 agents) and BenchmarkEventToDOM (p50/p99 in Chromium)
#   scripts/bench.sh memory-recall FILE...  # memory.BenchmarkRecall: R@k per category on
#                                # LoCoMo-format dialogs, zero-hit count, ingest rate, search p50/p99
#   scripts/bench.sh pool        # llm.BenchmarkPoolBusy: model-busy %, 8 agents on 2 fake hosts × 4 slots;
#                                # llm.BenchmarkPoolInteractiveWait: a person's queue wait under batch load
#   scripts/bench.sh tier        # the 10,000-agent tier figures in one run: pool, overhead-memory and pending
#   scripts/bench.sh schedules   # schedule.BenchmarkQuietSchedules100: 100 every-minute schedules with
#                                # --when-changed over 30 simulated minutes, quiet and 1 in 10 changing:
#                                # model calls, runs woken, CPU per firing p50/p99, RSS first/last minute
#
# Benchmarks report figures and never fail on them. Machine noise is large on 2 busy cores:
# compare runs made back to back, and prefer the medians over several counts.
#
# Environment:
#   BENCH_COUNT    runs of each benchmark (default 2)
#   BENCH_STEPS    steps per StepOverhead run (default 2000)
#   BENCH_AGENTS   agents awaiting decisions in the pending mode (default 10000)
#   BENCH_PAIRS    agentd/bare pairs per StepVsBareChat mode (default 10; ~10 s a pair)
#   RECALL_FILLER  other agents' memories mixed in by memory-recall (default 100000)
#   RECALL_CHATTY  percent of that filler made of the dialogs' own words (default 50)
#   RECALL_HALFLIFE  memory-recall's half_life, e.g. 720h (default none)
#   RECALL_DUMP    memory-recall writes the questions whose evidence missed the top 10 to this file
#   RECALL_PROMPT_CTX  with memory-recall: measure evidence in the prompt instead, the memory
#                  section the agent's prompt carries at this num_ctx (e.g. 2048)
#   BENCH_CALLS    model calls per pool benchmark run (default 1000; 50 ms each on 8 slots)
#   BENCH_OUT      directory for the raw output (benchstat input) and CPU profiles (default a temp dir)
#   AGENTD_OLLAMA_BIN  the Ollama binary; else `ollama` on PATH, else scripts/ollama.sh's cache.
#                  Without one the real-server figures are skipped (scripts/ollama.sh builds it).
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib.sh

what=${1:-all}
count=${BENCH_COUNT:-2}
steps=${BENCH_STEPS:-2000}
pairs=${BENCH_PAIRS:-10}
out=${BENCH_OUT:-$(mktemp -d -t agentd-bench.XXXXXX)}
mkdir -p "$out"

ensure_go

# memory-recall is its own benchmark, in the memory package; it prints its table and exits.
if [ "$what" = memory-recall ]; then
	shift
	[ $# -gt 0 ] || die "usage: scripts/bench.sh memory-recall FILE.json... (LoCoMo format, e.g. ../shared/data/locomo-dev/*.json)"
	files=()
	for f in "$@"; do
		[ -f "$f" ] || die "memory-recall: $f: no such file; give LoCoMo-format JSON files"
		files+=("$(cd "$(dirname "$f")" && pwd)/$(basename "$f")")
	done
	dump=${RECALL_DUMP:-}
	[ -z "$dump" ] || [ "${dump#/}" != "$dump" ] || dump="$PWD/$dump" # go test runs in memory/
	say "memory-recall: ${#files[@]} dialog file(s), ${RECALL_FILLER:-100000} filler memories"
	bench='^BenchmarkRecall$'
	[ -z "${RECALL_PROMPT_CTX:-}" ] || bench='^BenchmarkRecallPrompt$'
	(IFS=,; AGENTD_RECALL_FILES="${files[*]}" AGENTD_RECALL_FILLER="${RECALL_FILLER:-100000}" AGENTD_RECALL_CHATTY="${RECALL_CHATTY:-50}" \
		AGENTD_RECALL_HALFLIFE="${RECALL_HALFLIFE:-}" AGENTD_RECALL_DUMP="$dump" RECALL_PROMPT_CTX="${RECALL_PROMPT_CTX:-}" \
		go test -run '^$' -bench "$bench" -benchtime 1x -count 1 -timeout 60m ./memory/) |
		tee "$out/recall.txt" | grep -vE '^(goos|goarch|pkg|cpu|PASS|ok|--- BENCH|    )' || true
	exit 0
fi
# web is the web console's own pair; the DOM one needs Chromium (it skips without it).
if [ "$what" = web ]; then
	command -v chromium >/dev/null 2>&1 || apt_install chromium || say "no chromium: BenchmarkEventToDOM will skip"
	say "web: load $(cut -d' ' -f1-3 /proc/loadavg)"
	go test -run '^$' -bench '^Benchmark(AgentsPage1000|EventToDOM)$' -benchtime 100x -count "$count" -timeout 30m ./daemon/web/ |
		tee "$out/web.txt" | grep -E '^Benchmark' || true
	exit 0
fi

# schedules is the wake conditions' daemon-level figure, in the schedule package (the real
# supervisor and store, a fake model counting its calls); one iteration is 30 simulated minutes.
if [ "$what" = schedules ]; then
	say "schedules: load $(cut -d' ' -f1-3 /proc/loadavg)"
	go test -run '^$' -bench '^BenchmarkQuietSchedules100$' -benchtime 1x -count "$count" -timeout 30m ./daemon/schedule/ |
		tee "$out/schedules.txt" | grep -E '^Benchmark' >&2 || true
	awk '/^Benchmark/ { for (i = 3; i < NF; i += 2) printf "%-44s %-28s %s\n", $1, $(i+1), $i }' "$out/schedules.txt"
	exit 0
fi
# pool is the model pool's benchmarks, in the llm package (fake hosts, no real model);
# "all" runs them first and goes on.
if [ "$what" = pool ] || [ "$what" = all ] || [ "$what" = tier ]; then
	go test -c -o "$out/llm.test" ./daemon/llm
	say "pool: -bench BenchmarkPool -benchtime ${BENCH_CALLS:-1000}x -count $count (load: $(cut -d' ' -f1-3 /proc/loadavg))"
	(cd "$out" && ./llm.test -test.run '^$' -test.bench '^BenchmarkPool(Busy|InteractiveWait)$' -test.benchtime "${BENCH_CALLS:-1000}x" \
		-test.count "$count" -test.timeout 60m) | tee -a "$out/raw.txt" | grep -E '^(Benchmark|\s+bench)' >&2 || true
	if [ "$what" = pool ]; then
		awk '/^Benchmark/ { for (i = 3; i < NF; i += 2) printf "%-44s %-24s %s\n", $1, $(i+1), $i }' "$out/raw.txt"
		exit 0
	fi
fi

say "building the benchmark binary"
go test -c -o "$out/agent.test" ./daemon/agent
case $what in all | pending | tier) go test -c -o "$out/server.test" ./daemon/server ;; esac

# run NAME BENCH-REGEXP BENCHTIME [extra flags]: runs one benchmark from $out, keeping the raw output.
run() {
	local name=$1 re=$2 benchtime=$3
	shift 3
	say "$name: -bench '$re' -benchtime $benchtime -count $count (load: $(cut -d' ' -f1-3 /proc/loadavg))"
	local bin=./agent.test
	if [ "$name" = pending ]; then bin=./server.test; fi
	(cd "$out" && AGENTD_BENCH_AGENTS="${BENCH_AGENTS:-10000}" $bin -test.run '^$' -test.bench "$re" -test.benchtime "$benchtime" \
		-test.count "$count" -test.timeout 60m "$@") | tee -a "$out/raw.txt" | grep -E '^(Benchmark|\s+bench)' >&2 || true
}

case $what in
all | overhead) run overhead '^BenchmarkStepOverhead$' "${steps}x" -test.cpuprofile "$out/overhead.prof" ;;&
all | prompt) run prompt '^BenchmarkFirstStepPrompt$' 1000x ;;&
overhead-memory | tier) run overhead-memory '^BenchmarkStepOverhead$/^episodes=1000$/^memories=100000$' "${steps}x" -test.cpuprofile "$out/overhead.prof" ;;&
all | pending | tier) run pending '^BenchmarkRestartPending$' 1x ;;&
all | real) run real '^BenchmarkStepVsBareChat$' "${pairs}x" ;;
all | overhead | overhead-memory | prompt | pending | tier) ;;
*) die "usage: scripts/bench.sh [all|overhead|overhead-memory|prompt|pending|real|pool|tier|web|schedules|memory-recall FILE...]" ;;
esac

# One figure a line: benchmark, metric, value (every count, in order).
echo "# figures (raw output: $out/raw.txt)"
awk '/^Benchmark/ { for (i = 3; i < NF; i += 2) printf "%-44s %-24s %s\n", $1, $(i+1), $i }' "$out/raw.txt"
[ -f "$out/overhead.prof" ] && echo "# CPU profile of the last overhead run: go tool pprof -top $out/agent.test $out/overhead.prof"
exit 0
