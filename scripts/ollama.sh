#!/usr/bin/env bash
# scripts/ollama.sh — make sure an Ollama v0.17.4 binary exists and print its path.
#
# Order of preference: $AGENTD_OLLAMA_BIN, an `ollama` on PATH, the cached build under
# ${XDG_CACHE_HOME:-$HOME/.cache}/agentd/ollama-0.17.4/, else build it from its Go module
# (CGO; minutes cold, seconds when Go's build cache is warm). Progress goes to stderr;
# the compiler's and apt's output to $AGENTD_LOGS/ollama.log, shown when a step fails;
# the binary's path is the only thing on stdout.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib.sh

OLLAMA_VERSION=0.17.4
MALGO_VERSION=v0.11.24 # ships miniaudio.h, which the ollama module zip omits
cache="$AGENTD_CACHE/ollama-$OLLAMA_VERSION"

if [ -n "${AGENTD_OLLAMA_BIN:-}" ] && [ -x "$AGENTD_OLLAMA_BIN" ]; then
	echo "$AGENTD_OLLAMA_BIN"; exit 0
fi
if [ "${AGENTD_OLLAMA_BUILD:-}" != "1" ] && command -v ollama >/dev/null 2>&1; then
	command -v ollama; exit 0
fi
if [ -x "$cache/ollama" ]; then
	echo "$cache/ollama"; exit 0
fi

ensure_go
# Debian headers llama.cpp needs that the module zip leaves out.
need=()
[ -f /usr/include/nlohmann/json.hpp ] || need+=(nlohmann-json3-dev)
[ -f /usr/include/stb/stb_image.h ] || need+=(libstb-dev)
command -v gcc >/dev/null 2>&1 && command -v g++ >/dev/null 2>&1 || need+=(build-essential)
[ ${#need[@]} -eq 0 ] || apt_install "${need[@]}" || die "could not install ${need[*]}, which the Ollama build needs"

quietly ollama.log go mod download "github.com/gen2brain/malgo@$MALGO_VERSION" || die "could not download github.com/gen2brain/malgo@$MALGO_VERSION (for miniaudio.h)"
malgo=$(module_dir "github.com/gen2brain/malgo@$MALGO_VERSION")
[ -f "$malgo/miniaudio.h" ] || die "miniaudio.h not found in $malgo"
inc="$cache/include"
mkdir -p "$inc/miniaudio"
cp "$malgo/miniaudio.h" "$inc/miniaudio/miniaudio.h"

say "building Ollama v$OLLAMA_VERSION from its Go module, once (cached in $cache): about 14 CPU-minutes, some 10 minutes on 2 idle cores and more on a busy machine. Output: $AGENTD_LOGS/ollama.log"
tmp="$cache/tmp"; mkdir -p "$tmp"
start=$(date +%s)
# Go builds cgo with -g -O2 by default: without -g the C++ of llama.cpp and ggml compiles
# in about 40% less time, and the server runs the same (its own -O3 flags still apply).
GOBIN="$tmp" CGO_ENABLED=1 GOFLAGS=-buildvcs=false CGO_CFLAGS=-O2 CGO_CXXFLAGS=-O2 \
	CGO_CPPFLAGS="-I$inc -I/usr/include/stb ${CGO_CPPFLAGS:-}" \
	go_build ollama.log "building Ollama v$OLLAMA_VERSION (the C++ of llama.cpp and ggml is most of it)" install \
	-ldflags "-X=github.com/ollama/ollama/version.Version=$OLLAMA_VERSION -X=github.com/ollama/ollama/server.mode=release" \
	"github.com/ollama/ollama@v$OLLAMA_VERSION" || die "the Ollama build failed (its output is above)"
mv "$tmp/ollama" "$cache/ollama"
rmdir "$tmp" 2>/dev/null || true
say "built $cache/ollama in $(( $(date +%s) - start ))s"
echo "$cache/ollama"
