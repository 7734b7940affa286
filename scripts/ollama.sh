#!/usr/bin/env bash
# scripts/ollama.sh — make sure an Ollama v0.17.4 binary exists and print its path.
#
# Order of preference: $AGENTD_OLLAMA_BIN, an `ollama` on PATH, the cached build under
# ${XDG_CACHE_HOME:-$HOME/.cache}/agentd/ollama-0.17.4/, else build it from its Go module
# (CGO; ~5-7 minutes cold on 2 cores, seconds when Go's build cache is warm).
# Progress goes to stderr; the binary's path is the only thing on stdout.
set -euo pipefail

OLLAMA_VERSION=0.17.4
MALGO_VERSION=v0.11.24 # ships miniaudio.h, which the ollama module zip omits
cache="${XDG_CACHE_HOME:-$HOME/.cache}/agentd/ollama-$OLLAMA_VERSION"
log() { printf 'ollama.sh: %s\n' "$*" >&2; }

if [ -n "${AGENTD_OLLAMA_BIN:-}" ] && [ -x "$AGENTD_OLLAMA_BIN" ]; then
	echo "$AGENTD_OLLAMA_BIN"; exit 0
fi
if [ "${AGENTD_OLLAMA_BUILD:-}" != "1" ] && command -v ollama >/dev/null 2>&1; then
	command -v ollama; exit 0
fi
if [ -x "$cache/ollama" ]; then
	echo "$cache/ollama"; exit 0
fi

# Debian headers llama.cpp needs that the module zip leaves out.
need=()
[ -f /usr/include/nlohmann/json.hpp ] || need+=(nlohmann-json3-dev)
[ -f /usr/include/stb/stb_image.h ] || need+=(libstb-dev)
command -v gcc >/dev/null 2>&1 && command -v g++ >/dev/null 2>&1 || need+=(build-essential)
if [ ${#need[@]} -gt 0 ]; then
	log "installing Debian packages: ${need[*]}"
	sudo_=""; [ "$(id -u)" = 0 ] || sudo_=sudo
	export DEBIAN_FRONTEND=noninteractive
	$sudo_ apt-get update -qq >&2 || true
	$sudo_ apt-get install -y -qq "${need[@]}" >&2
fi

malgo=$(go mod download -json "github.com/gen2brain/malgo@$MALGO_VERSION" | sed -n 's/.*"Dir": "\(.*\)".*/\1/p')
[ -f "$malgo/miniaudio.h" ] || { log "miniaudio.h not found in $malgo"; exit 1; }
inc="$cache/include"
mkdir -p "$inc/miniaudio"
cp "$malgo/miniaudio.h" "$inc/miniaudio/miniaudio.h"

log "building Ollama v$OLLAMA_VERSION from its Go module (takes 5-7 minutes the first time; cached afterwards in $cache)"
tmp="$cache/tmp"; mkdir -p "$tmp"
start=$(date +%s)
(
	export GOBIN="$tmp" CGO_ENABLED=1 GOFLAGS=-buildvcs=false
	export CGO_CPPFLAGS="-I$inc -I/usr/include/stb ${CGO_CPPFLAGS:-}"
	go install -ldflags "-X=github.com/ollama/ollama/version.Version=$OLLAMA_VERSION -X=github.com/ollama/ollama/server.mode=release" \
		"github.com/ollama/ollama@v$OLLAMA_VERSION" >&2
) &
pid=$!
while kill -0 "$pid" 2>/dev/null; do
	sleep 15
	kill -0 "$pid" 2>/dev/null && log "still building Ollama... $(( $(date +%s) - start ))s"
done
wait "$pid"
mv "$tmp/ollama" "$cache/ollama"
rmdir "$tmp" 2>/dev/null || true
log "built $cache/ollama in $(( $(date +%s) - start ))s"
echo "$cache/ollama"
