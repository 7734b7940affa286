#!/usr/bin/env bash
# scripts/run.sh — the main job, from a fresh Debian machine: an Ollama server, a model,
# agentd, and a demo agent followed live in this terminal.
#
#   scripts/run.sh                 # the demo task
#   scripts/run.sh "YOUR TASK"     # your own task
#
# Environment:
#   OLLAMA_HOST    use this Ollama server instead of finding or starting one
#   AGENTD_MODEL   the model to use (default qwen2.5:3b); pulled when the network allows,
#                  else the project's tiny offline model is created instead (its answers are noise)
#   AGENTD_HOME    where state, socket, config and logs go (default ./.state)
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib.sh

TASK=${1:-"Write a short haiku about local-first software into haiku.txt, read it back to check it, then finish."}
MODEL=${AGENTD_MODEL:-qwen2.5:3b}
HOME_DIR=${AGENTD_HOME:-$PWD/.state}
mkdir -p "$HOME_DIR"
HOME_DIR=$(cd "$HOME_DIR" && pwd)

ensure_go
ensure_build_deps

say "building agentd and agentctl"
mkdir -p bin
go build -o bin/ ./cmd/agentd ./cmd/agentctl ./cmd/tinymodel

pids=()
cleanup() {
	for p in "${pids[@]}"; do kill -TERM -- "-$p" 2>/dev/null || kill -TERM "$p" 2>/dev/null || true; done
}
trap cleanup EXIT INT TERM

reachable() { curl -fsS -m 3 "$1/api/version" >/dev/null 2>&1; }
normalize() { local h=$1; case "$h" in http://*|https://*) ;; *) h="http://$h";; esac; echo "${h%/}"; }

# 1. An Ollama server.
if [ -n "${OLLAMA_HOST:-}" ] && reachable "$(normalize "$OLLAMA_HOST")"; then
	HOST=$(normalize "$OLLAMA_HOST"); say "using the Ollama server at $HOST (OLLAMA_HOST)"
elif reachable http://127.0.0.1:11434; then
	HOST=http://127.0.0.1:11434; say "using the Ollama server already running at $HOST"
else
	OLLAMA_BIN=$(bash scripts/ollama.sh)
	HOST=http://127.0.0.1:11434
	say "starting $OLLAMA_BIN serve on $HOST (log: $HOME_DIR/ollama.log)"
	OLLAMA_HOST=127.0.0.1:11434 setsid "$OLLAMA_BIN" serve >"$HOME_DIR/ollama.log" 2>&1 &
	pids+=($!)
	for _ in $(seq 1 120); do reachable "$HOST" && break; sleep 0.5; done
	reachable "$HOST" || die "Ollama did not start; see $HOME_DIR/ollama.log"
fi
export OLLAMA_HOST=$HOST
OLLAMA_CLI=$(command -v ollama || bash scripts/ollama.sh)

# 2. The model: pull it, or fall back to the tiny offline model.
has_model() { curl -fsS -m 10 "$HOST/api/show" -d "{\"model\":\"$1\"}" >/dev/null 2>&1; }
if has_model "$MODEL"; then
	say "model $MODEL is present"
else
	say "pulling $MODEL (this can take a while)"
	if ! "$OLLAMA_CLI" pull "$MODEL" >&2; then
		MODEL=agentd-tiny
		bar='!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!'
		printf '%s\n!! Could not pull a model (no network?). Using the project'"'"'s TINY OFFLINE MODEL:\n' "$bar" >&2
		printf '!! its weights are random, so its answers are NOISE. The agent cycle, approvals and\n' >&2
		printf '!! state all work, but do not expect sense. For a real agent run, with network:\n' >&2
		printf '!!     ollama pull qwen2.5:3b   and then   AGENTD_MODEL=qwen2.5:3b scripts/run.sh\n%s\n' "$bar" >&2
		if ! has_model agentd-tiny; then
			d="$HOME_DIR/tinymodel"; bin/tinymodel -o "$d"
			(cd "$d" && "$OLLAMA_CLI" create agentd-tiny -f Modelfile >&2)
		fi
	fi
fi

# 3. agentd.
export AGENTD_SOCKET="$HOME_DIR/agentd.sock"
CONFIG="$HOME_DIR/agentd.toml"
cat >"$CONFIG" <<TOML
# Written by scripts/run.sh; see agentd.example.toml for every setting.
[ollama]
host = "$HOST"
model = "$MODEL"
TOML
say "starting agentd (state: $HOME_DIR, log: $HOME_DIR/agentd.log)"
setsid bin/agentd --config "$CONFIG" --state-dir "$HOME_DIR/state" --socket "$AGENTD_SOCKET" >"$HOME_DIR/agentd.log" 2>&1 &
pids+=($!)
for _ in $(seq 1 100); do bin/agentctl status >/dev/null 2>&1 && break; sleep 0.1; done
bin/agentctl status >&2 || die "agentd did not start; see $HOME_DIR/agentd.log"

# 4. A demo agent, followed live: answer y, y -N, n, or type feedback.
say "creating an agent for: $TASK"
say "answer each proposal with y, y -N (this and the next N-1), n (stop), or feedback text. Ctrl-C quits."
bin/agentctl run --follow "$TASK"
