# scripts/lib.sh — shared set-up for scripts/run.sh, test.sh, install.sh and ollama.sh. Source it.
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
# Its beats name CMD, or $label when set.
# Installs are noisy (apt, debconf, downloads) and only their failures are worth reading.
quietly() {
	local log="$AGENTD_LOGS/$1" rc=0 pid; shift
	mkdir -p "$AGENTD_LOGS"
	printf '\n$ %s\n' "$*" >>"$log"
	"$@" >>"$log" 2>&1 </dev/null &
	pid=$!
	beat_until "$pid" "${label:-$*}"
	wait "$pid" || rc=$?
	if [ "$rc" != 0 ]; then
		printf 'error: `%s` failed (exit %d); its output, from %s:\n' "$*" "$rc" "$log" >&2
		tail -n 200 "$log" >&2
	fi
	return "$rc"
}

# beat_until PID LABEL: until process PID ends, says that LABEL still runs whenever nothing
# was said for 25 s (AGENTD_BEAT_SECONDS): a slow step (apt, a download, vet on a busy
# machine), or a row of them, never leaves the screen silent for 30 s. When $progress
# names a function, each beat ends with what it prints (how much is done, what is left).
beat_until() {
	local pid=$1 label=$2 every=${AGENTD_BEAT_SECONDS:-25} start=$SECONDS more
	while kill -0 "$pid" 2>/dev/null; do
		if [ $((SECONDS - ${_said:-0})) -ge "$every" ]; then
			more=; [ -z "${progress:-}" ] || more=$("$progress" 2>/dev/null) || more=
			say "still running ($((SECONDS - start))s so far): $label${more:+ — $more}"
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

# go_build LOG LABEL SUBCOMMAND ARGS... PKG...: `go build -v` (or install), quietly into
# $AGENTD_LOGS/LOG, with beats that say LABEL and count the packages built of those the
# build needs: a cold build of agentd compiles ~400 packages for minutes (SQLite in Go
# alone is one of the slowest), and the person sees how far it got and what is left.
# The arguments after SUBCOMMAND that do not start with - and follow no flag taking a
# value are the packages. go list counts their dependencies: a package of this module's
# in this module's versions, a module's pkg@version (go install's form) in that module's
# own, as go install builds it (in this module's it came out a quarter short).
go_build() {
	local log=$1 label=$2 sub=$3; shift 3
	local pkgs=() versioned=() a skip=false
	for a in "$@"; do
		if $skip; then skip=false; continue; fi
		case "$a" in -o | -ldflags | -tags | -gcflags) skip=true ;; -*) ;; *@*) versioned+=("$a") ;; *) pkgs+=("$a") ;; esac
	done
	mkdir -p "$AGENTD_LOGS"
	_build_log="$AGENTD_LOGS/$log"
	_build_from=$( { [ -f "$_build_log" ] && wc -l <"$_build_log"; } || echo 0)
	# The packages Go's build cache lacks, standard library included: what -v names as it
	# builds them (a warm cache leaves only the commands to link).
	# (-e and || true: a package go list cannot load still counts; pipefail must not
	# turn that into no total.)
	_build_total=$( {
		[ ${#pkgs[@]} -eq 0 ] || go list -e -deps -f '{{if .Stale}}{{.ImportPath}}{{end}}' "${pkgs[@]}" 2>/dev/null || true
		for a in ${versioned[@]+"${versioned[@]}"}; do stale_in_module "$a"; done
	} | sort -u | grep -c .) || _build_total=
	label=$label progress=build_progress quietly "$log" go "$sub" -v "$@"
}

# module_dir MODULE@VERSION downloads the module and prints its folder in the module cache.
module_dir() { go mod download -json "$1" | sed -n 's/.*"Dir": "\(.*\)".*/\1/p'; }

# stale_in_module MODULE@VERSION lists the packages a go install of it would build, in
# the module's own versions (its go.mod, from the module cache).
stale_in_module() {
	local dir
	dir=$(module_dir "$1" 2>/dev/null) || return 0
	[ -n "$dir" ] || return 0
	(cd "$dir" && go list -e -deps -f '{{if .Stale}}{{.ImportPath}}{{end}}' . 2>/dev/null) || true
}

# build_progress says how many packages go_build's build has named so far, of how many.
build_progress() {
	local n
	n=$(tail -n "+$((_build_from + 1))" "$_build_log" | grep -cE '^[[:alnum:]_.~-]+(/[[:alnum:]_.~+-]+)*$') || n=0
	if [ -n "${_build_total:-}" ]; then echo "$n of $_build_total packages built"; else echo "$n packages built"; fi
}

# agentd_ldflags stamp the version into agentd at link time. Every script builds with
# these flags and no others, the same as go test and go vet use: a flag that changes
# how packages compile (-trimpath, -race, another CGO_CFLAGS) makes Go's build cache
# miss and compiles all ~400 packages again, minutes on 2 cores. -X changes the link only.
agentd_ldflags() {
	echo "-X main.version=$(git describe --always --dirty 2>/dev/null || echo dev)"
}

# build_agentd DIR PKG...: builds agentd's commands PKG into DIR (bin/ for run.sh, a
# staging folder for install.sh), quietly, with progress.
build_agentd() {
	local out=$1; shift
	quietly install.log go mod download || die "could not download Go modules (above); check the network or GOPROXY"
	go_build build.log "go build $*" build -ldflags "$(agentd_ldflags)" -o "$out/" "$@" || die "go build failed (its output is above)"
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

# ensure_sandbox: bubblewrap, without which agentd refuses every execute_shell and
# execute_python_file command, and slirp4netns, which a sandbox granted the network needs.
# Never fatal (no root, no sudo, no apt): it says what is missing and what that costs, and
# apt_install's own die ends only its subshell.
ensure_sandbox() {
	command -v bwrap >/dev/null 2>&1 || (apt_install bubblewrap) ||
		say "bubblewrap not installed: agentd refuses shell and python commands until it is (apt-get install bubblewrap)"
	command -v slirp4netns >/dev/null 2>&1 || (apt_install slirp4netns) ||
		say "slirp4netns not installed: agentd refuses shell and python commands granted the network until it is (apt-get install slirp4netns)"
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
