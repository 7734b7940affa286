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
#   OLLAMA_HOST    the Ollama server to use; when nothing answers there run.sh starts one
#                  there if it is this machine, and otherwise stops and says so
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
ensure_sandbox # the demo agent's shell commands run in it

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
		local name; name=$(demo_agent)
		[ -z "$name" ] || say "    bin/agentctl follow $name";;
	esac
	say "still running, started by run.sh: ${running% }; stop them with: scripts/run.sh stop"
	exit "$rc"
}
trap on_exit EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

reachable() { curl -fsS -m 3 "$1/api/version" >/dev/null 2>&1; }
# normalize turns OLLAMA_HOST as Ollama reads it (host, host:port, a URL) into a URL with
# a port: 11434 unless it says another.
normalize() {
	local h=${1%/} scheme=http://
	case "$h" in http://*) h=${h#http://};; https://*) h=${h#https://}; scheme=https://;; esac
	case "$h" in *:[0-9]*) ;; "") h=127.0.0.1:11434;; *) h="$h:11434";; esac
	case "$h" in :*) h="127.0.0.1$h";; esac
	echo "$scheme$h"
}

# is_local URL: the server would run on this machine, where run.sh can start one.
is_local() { case "$1" in http://127.*|https://127.*|http://localhost[:/]*|http://localhost|http://\[::1\]*|http://0.0.0.0*) return 0;; esac; return 1; }

# start_ollama HOST: starts the project's (or PATH's) ollama serve at HOST, and waits for it.
start_ollama() {
	local bin; bin=$(bash scripts/ollama.sh) || die "no Ollama server binary (scripts/ollama.sh failed, above)"
	say "starting $bin serve on $1 (log: $HOME_DIR/ollama.log)"
	OLLAMA_HOST=${1#http://} setsid "$bin" serve >"$HOME_DIR/ollama.log" 2>&1 &
	started ollama $!
	for _ in $(seq 1 240); do reachable "$1" && return 0; alive ollama "$!" || break; sleep 0.5; done
	reachable "$1" || die "Ollama did not start on $1; its log, $HOME_DIR/ollama.log, says why"
}

# 1. An Ollama server: the one OLLAMA_HOST names (started here when it is this machine's
# and does not answer), else one on 127.0.0.1:11434, else one started here.
if [ -n "${OLLAMA_HOST:-}" ]; then
	HOST=$(normalize "$OLLAMA_HOST")
	if reachable "$HOST"; then
		say "using the Ollama server at $HOST (OLLAMA_HOST)"
	elif is_local "$HOST"; then
		say "no Ollama server answers at $HOST (OLLAMA_HOST=$OLLAMA_HOST): starting one there"
		start_ollama "$HOST"
	else
		die "no Ollama server answers at $HOST (OLLAMA_HOST=$OLLAMA_HOST; $(curl -sS -m 3 "$HOST/api/version" 2>&1 >/dev/null | head -n 1)): start it there, fix OLLAMA_HOST, or unset it and run.sh finds or starts one on this machine"
	fi
elif reachable http://127.0.0.1:11434; then
	HOST=http://127.0.0.1:11434; say "using the Ollama server already running at $HOST"
else
	HOST=http://127.0.0.1:11434
	start_ollama "$HOST"
fi
export OLLAMA_HOST=$HOST
# ollama_cli is the ollama command, for pull and create: only a missing model needs it,
# so a server already running spares the build.
ollama_cli() { command -v ollama || bash scripts/ollama.sh; }

say "building agentd and agentctl into bin/ (a first build compiles for minutes; output: $AGENTD_LOGS/build.log)"
mkdir -p bin
build_agentd bin ./cmd/agentd ./cmd/agentctl ./cmd/tinymodel

# 2. The model: pull it, or fall back to the tiny offline model.
has_model() { curl -fsS -m 10 "$HOST/api/show" -d "{\"model\":\"$1\"}" >/dev/null 2>&1; }
if has_model "$MODEL"; then
	say "model $MODEL is present"
else
	say "pulling $MODEL (this can take a while)"
	OLLAMA_CLI=$(ollama_cli) || die "no ollama command to pull $MODEL with (scripts/ollama.sh failed, above)"
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
model = "$MODEL"

[[ollama.hosts]]
url = "$HOST"
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

# agents lists the top agents agentd has, one "ID NAME" a line (helpers, NAME/HELPER, left out).
agents() { bin/agentctl ls 2>/dev/null | awk 'NR > 1 && $2 !~ /\// { print $1, $2 }'; }
# demo_agent is the name, as it is now, of the agent run.sh created: the model may have
# renamed it since `run` printed it.
demo_agent() {
	[ -n "${AGENTS_BEFORE+set}" ] || return 0
	agents | while read -r id name; do
		grep -qx "$id .*" <<<"$AGENTS_BEFORE" || { echo "$name"; break; }
	done
}

# 4. A demo agent, followed live: answer y, y -N, n, or type feedback.
say "creating an agent for: $TASK"
say "answer each proposal with y, y -N (this and the next N-1), n (stop), or feedback text. Ctrl-C quits; agentd keeps running."
AGENTS_BEFORE=$(agents)
bin/agentctl run --follow "$TASK"
