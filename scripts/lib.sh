# scripts/lib.sh — shared set-up for scripts/run.sh and scripts/test.sh. Source it.
#
# ensure_go: a Go toolchain new enough for go.mod, installing one when missing. Debian's own
# golang package is too old, so the toolchain comes from the Go module proxy, where Go
# publishes it as the module golang.org/toolchain (the same thing GOTOOLCHAIN=auto fetches).

GO_WANT=1.26.8
AGENTD_CACHE="${XDG_CACHE_HOME:-$HOME/.cache}/agentd"

AGENTD_LOGS="${AGENTD_LOGS:-$AGENTD_CACHE/logs}"

say() { printf '==> %s\n' "$*" >&2; _said=$SECONDS; }
die() { printf 'error: %s\n' "$*" >&2; exit 1; }

# quietly LOG CMD...: runs CMD with its output appended to $AGENTD_LOGS/LOG; on failure prints
# that output (its last 200 lines) so the person sees why, and returns CMD's status.
# Installs are noisy (apt, debconf, downloads) and only their failures are worth reading.
quietly() {
	local log="$AGENTD_LOGS/$1" rc=0 pid; shift
	mkdir -p "$AGENTD_LOGS"
	printf '\n$ %s\n' "$*" >>"$log"
	"$@" >>"$log" 2>&1 </dev/null &
	pid=$!
	beat_until "$pid" "$*"
	wait "$pid" || rc=$?
	if [ "$rc" != 0 ]; then
		printf 'error: `%s` failed (exit %d); its output, from %s:\n' "$*" "$rc" "$log" >&2
		tail -n 200 "$log" >&2
	fi
	return "$rc"
}

# beat_until PID LABEL: until process PID ends, says that LABEL still runs whenever nothing
# was said for 25 s (AGENTD_BEAT_SECONDS): a slow step (apt, a download, vet on a busy
# machine), or a row of them, never leaves the screen silent for 30 s.
beat_until() {
	local pid=$1 label=$2 every=${AGENTD_BEAT_SECONDS:-25} start=$SECONDS
	while kill -0 "$pid" 2>/dev/null; do
		if [ $((SECONDS - ${_said:-0})) -ge "$every" ]; then
			say "still running ($((SECONDS - start))s so far): $label"
		fi
		sleep 0.2
	done
}

# beating LABEL CMD...: runs CMD, its output shown, with beat_until's lines; CMD's status.
beating() {
	local label=$1 pid rc=0; shift
	"$@" &
	pid=$!
	beat_until "$pid" "$label"
	wait "$pid" || rc=$?
	return "$rc"
}

as_root() {
	if [ "$(id -u)" = 0 ]; then "$@"; elif command -v sudo >/dev/null 2>&1; then sudo "$@"; else die "need root for: $*"; fi
}

apt_install() {
	local missing=()
	for p in "$@"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
	[ ${#missing[@]} -eq 0 ] && return 0
	say "installing Debian packages: ${missing[*]}"
	# as_root's own die would vanish into the log: check here, where it is seen.
	[ "$(id -u)" = 0 ] || command -v sudo >/dev/null 2>&1 || die "need root (or sudo) to apt-get install ${missing[*]}"
	export DEBIAN_FRONTEND=noninteractive
	quietly install.log as_root apt-get update -qq || say "apt-get update failed (see above); trying the install anyway"
	quietly install.log as_root apt-get install -y -qq "${missing[@]}"
}

go_ok() {
	command -v go >/dev/null 2>&1 || return 1
	local v; v=$(go env GOVERSION 2>/dev/null) || return 1
	v=${v#go}
	# want >= 1.26
	local major=${v%%.*} rest=${v#*.}; local minor=${rest%%.*}
	[ "$major" -gt 1 ] || { [ "$major" -eq 1 ] && [ "${minor%%[!0-9]*}" -ge 26 ]; }
}

ensure_go() {
	[ -x /usr/local/go/bin/go ] && PATH="/usr/local/go/bin:$PATH"
	[ -x "$AGENTD_CACHE/go/bin/go" ] && PATH="$AGENTD_CACHE/go/bin:$PATH"
	export PATH
	go_ok && return 0
	say "no Go >= 1.26 found: fetching go$GO_WANT from the Go module proxy (module golang.org/toolchain)"
	apt_install ca-certificates curl unzip gcc g++ make git
	local proxy="${GOPROXY:-https://proxy.golang.org}"; proxy=${proxy%%,*}
	local zip="$AGENTD_CACHE/toolchain.zip" tmp="$AGENTD_CACHE/toolchain.tmp"
	mkdir -p "$AGENTD_CACHE"
	quietly install.log curl -fsSL -o "$zip" "$proxy/golang.org/toolchain/@v/v0.0.1-go$GO_WANT.linux-amd64.zip" ||
		die "could not download Go $GO_WANT from $proxy (set GOPROXY to a reachable Go module proxy)"
	rm -rf "$tmp" && mkdir -p "$tmp" && quietly install.log unzip -q "$zip" -d "$tmp"
	rm -rf "$AGENTD_CACHE/go"
	mv "$tmp/golang.org/toolchain@v0.0.1-go$GO_WANT.linux-amd64" "$AGENTD_CACHE/go"
	rm -rf "$tmp" "$zip"
	chmod +x "$AGENTD_CACHE"/go/bin/* "$AGENTD_CACHE"/go/pkg/tool/*/* 2>/dev/null || true
	PATH="$AGENTD_CACHE/go/bin:$PATH"; export PATH
	go_ok || die "could not install Go $GO_WANT"
}

# ensure_build_deps: what cgo builds need (Ollama) besides Go.
ensure_build_deps() {
	command -v gcc >/dev/null 2>&1 && command -v g++ >/dev/null 2>&1 && command -v curl >/dev/null 2>&1 || apt_install gcc g++ curl ca-certificates
}
