#!/usr/bin/env bash
# scripts/screenshots.sh — regenerates the web console screenshots the README shows
# (docs/screenshots/web-agents.png and web-agent.png). The browser test that drives the
# console in headless Chromium takes them (daemon/web TestBrowserDecides); this copies two
# of its screenshots into docs/. Installs Go and Debian's chromium when missing.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib.sh

ensure_go
command -v chromium >/dev/null 2>&1 || apt_install chromium
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
say "running the browser test (headless Chromium)"
AGENTD_LOGS="$out" quietly screenshots.log go test -count=1 -run 'TestBrowserDecides$' ./daemon/web/
mkdir -p docs/screenshots
cp "$out/web-screenshots/agents.png" docs/screenshots/web-agents.png
cp "$out/web-screenshots/agent.png" docs/screenshots/web-agent.png
say "wrote docs/screenshots/web-agents.png and docs/screenshots/web-agent.png"
