#!/usr/bin/env bash
# scripts/run.sh — the main job, from a fresh Debian machine: an Ollama server, a model,
# agentd, and a demo agent followed live in this terminal.
#
#   scripts/run.sh                 # the demo task
#   scripts/run.sh "YOUR TASK"     # your own task
#   scripts/run.sh stop            # stop the agentd (and Ollama server) run.sh started
#
# agentd keeps running when run.sh ends (answering n, the agent finishing, Ctrl-C): your
# agents and their history stay, and plain `bin/agentctl` in any shell of yours finds it
# at the per-user socket. When this terminal is interactive run.sh asks whether to stop it.
#
# Environment:
#   OLLAMA_HOST    use this Ollama server instead of finding or starting one
#   AGENTD_MODEL   the model to use (default qwen2.5:3b); pulled when the network allows,
#                  else the project's tiny offline model is created instead (its answers are noise)
#   AGENTD_HOME    where state, config, logs and the list of started processes go (default ./.state)
#   AGENTD_SOCKET  agentd's socket (default: the per-user path agentctl looks at first)
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib.sh

HOME_DIR=${AGENTD_HOME:-$PWD/.state}
mkdir -p "$HOME_DIR"
HOME_DIR=$(cd "$HOME_DIR" && pwd)
# PIDS lists what run.sh started, one "NAME PID" a line, for `scripts/run.sh stop`.
PIDS="$HOME_DIR/run.pids"

# alive NAME PID: the process PID runs and is still the NAME run.sh started, not a
# process that reused its pid.
alive() { [ -r "/proc/$2/cmdline" ] && tr '\0' ' ' <"/proc/$2/cmdline" | grep -q "$1"; }

# prune drops from $PIDS what no longer runs, and prints the names of what does.
prune() {
	[ -f "$PIDS" ] || return 0
	local name pid keep=
	while read -r name pid; do
		alive "$name" "$pid" && keep+="$name $pid"$'\n' && echo "$name"
	done <"$PIDS"
	if [ -n "$keep" ]; then printf '%s' "$keep" >"$PIDS"; else rm -f "$PIDS"; fi
}

# stop_started stops every process run.sh started that still runs, and says so.
stop_started() {
	[ -s "$PIDS" ] || { say "nothing to stop: run.sh started no agentd or Ollama server that still runs"; rm -f "$PIDS"; return 0; }
	local name pid
	while read -r name pid; do
		if alive "$name" "$pid"; then
			kill -TERM -- "-$pid" 2>/dev/null || kill -TERM "$pid" 2>/dev/null || true
			for _ in $(seq 1 100); do alive "$name" "$pid" || break; sleep 0.1; done
			if alive "$name" "$pid"; then say "$name (pid $pid) did not stop within 10s: kill -KILL $pid"; else say "stopped $name (pid $pid)"; fi
		fi
	done <"$PIDS"
	rm -f "$PIDS"
}

if [ "${1:-}" = stop ]; then
	stop_started
	exit 0
fi

TASK=${1:-"Write a short haiku about local-first software into haiku.txt, read it back to check it, then finish."}
MODEL=${AGENTD_MODEL:-qwen2.5:3b}

prune >/dev/null # forget what an earlier run.sh started that has stopped since
ensure_go
ensure_build_deps

say "building agentd and agentctl"
mkdir -p bin
go build -o bin/ ./cmd/agentd ./cmd/agentctl ./cmd/tinymodel

# started NAME PID records a process run.sh started, for `scripts/run.sh stop`.
started() { echo "$1 $2" >>"$PIDS"; }

# on_exit never stops agentd silently: it says what keeps running and how to stop it,
# and asks first when a person is at this terminal.
on_exit() {
	local rc=$?
	trap - EXIT INT TERM
	local running
	running=$(prune | sort -u | tr '\n' ' ')
	[ -n "$running" ] || exit "$rc"
	if [ -t 0 ] && [ -t 2 ]; then
		local ans=
		printf '==> stop agentd and what run.sh started now? Your agents stay either way. [y/N] ' >&2
		read -r ans </dev/tty || ans=
		case "$ans" in [yY]*) stop_started; exit "$rc";; esac
	fi
	case " $running" in *" agentd "*)
		say "agentd keeps running, with your agents (log: $HOME_DIR/agentd.log); from any shell of yours:"
		say "    bin/agentctl ls"
		say "    bin/agentctl follow NAME";;
	esac
	say "still running, started by run.sh: ${running% }; stop them with: scripts/run.sh stop"
	exit "$rc"
}
trap on_exit EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

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
	started ollama $!
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

# 3. agentd, at the per-user socket plain agentctl looks at first (or $AGENTD_SOCKET), so a
# second shell finds it; one that already answers there is used as it is.
CONFIG="$HOME_DIR/agentd.toml"
cat >"$CONFIG" <<TOML
# Written by scripts/run.sh; see agentd.example.toml for every setting.
[ollama]
host = "$HOST"
model = "$MODEL"
TOML
if bin/agentctl status >/dev/null 2>&1; then
	say "agentd already runs (bin/agentctl status): using it; its own config stays in force"
else
	say "starting agentd (state: $HOME_DIR, log: $HOME_DIR/agentd.log)"
	socket=()
	[ -n "${AGENTD_SOCKET:-}" ] && socket=(--socket "$AGENTD_SOCKET")
	setsid bin/agentd --config "$CONFIG" --state-dir "$HOME_DIR/state" "${socket[@]}" >"$HOME_DIR/agentd.log" 2>&1 &
	started agentd $!
	for _ in $(seq 1 100); do bin/agentctl status >/dev/null 2>&1 && break; sleep 0.1; done
fi
bin/agentctl status >&2 || die "agentd did not start; see $HOME_DIR/agentd.log"
say "from a second shell here: bin/agentctl ls   and   bin/agentctl follow NAME   (the name run prints below)"

# 4. A demo agent, followed live: answer y, y -N, n, or type feedback.
say "creating an agent for: $TASK"
say "answer each proposal with y, y -N (this and the next N-1), n (stop), or feedback text. Ctrl-C quits; agentd keeps running."
bin/agentctl run --follow "$TASK"
