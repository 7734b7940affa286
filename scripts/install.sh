#!/usr/bin/env bash
# scripts/install.sh — build agentd and agentctl and install them as a systemd service.
#
#   scripts/install.sh --user      # for you alone: ~/.local/bin, a systemd --user unit,
#                                  # config in ~/.config/agentd (no root needed)
#   sudo scripts/install.sh --system
#                                  # for the machine: /usr/local/bin, the agentd system
#                                  # user, /etc/agentd, /etc/systemd/system/agentd.service
#
# Existing config and secrets files are never overwritten. The service is not started:
# the script prints the commands that enable it.
#
# Environment:
#   DESTDIR             install under this root instead of / (packaging, tests); implies
#                       AGENTD_NO_SYSTEMCTL=1 and skips creating the system user
#   AGENTD_NO_SYSTEMCTL do not run systemctl daemon-reload
set -euo pipefail
self="$(cd "$(dirname "$0")" && pwd)/$(basename "$0")"
cd "$(dirname "$0")/.."
. scripts/lib.sh

usage() { sed -n '2,16p' "$self" | sed 's/^# \{0,1\}//'; }

mode=""
case "${1:-}" in
--user) mode=user ;;
--system) mode=system ;;
-h | --help) usage; exit 0 ;;
"") usage >&2; die "say --user or --system" ;;
*) usage >&2; die "unknown option $1 (want --user or --system)" ;;
esac
[ $# -le 1 ] || die "unexpected argument $2"

dest=${DESTDIR:-}
no_systemctl=${AGENTD_NO_SYSTEMCTL:-}
[ -z "$dest" ] || no_systemctl=1

if [ "$mode" = system ] && [ -z "$dest" ] && [ "$(id -u)" != 0 ]; then
	die "--system installs for the whole machine: run it with sudo (or use --user)"
fi

ensure_go
# agentd runs shell and python commands only in its sandbox; a DESTDIR install (a
# package's, a test's) installs nothing on this machine.
[ -n "$dest" ] || ensure_sandbox
build=$(mktemp -d)
trap 'rm -rf "$build"' EXIT
# The same flags as run.sh and test.sh: what they compiled is reused, not compiled again.
say "building agentd and agentctl (a first build compiles for minutes; output: $AGENTD_LOGS/build.log)"
build_agentd "$build" ./cmd/agentd ./cmd/agentctl

if [ "$mode" = user ]; then
	bindir="$dest$HOME/.local/bin"
	confdir="$dest${XDG_CONFIG_HOME:-$HOME/.config}/agentd"
	unitdir="$dest${XDG_CONFIG_HOME:-$HOME/.config}/systemd/user"
	unit=systemd/agentd-user.service
	owner=()
else
	bindir="$dest/usr/local/bin"
	confdir="$dest/etc/agentd"
	unitdir="$dest/etc/systemd/system"
	unit=systemd/agentd.service
	owner=()
	if [ -z "$dest" ]; then
		if ! id agentd >/dev/null 2>&1; then
			say "creating the system user agentd"
			useradd --system --home-dir /var/lib/agentd --no-create-home --shell /usr/sbin/nologin agentd
		fi
		owner=(-o root -g agentd)
	fi
fi

say "installing agentd and agentctl to $bindir"
install -d -m 0755 "$bindir"
install -m 0755 "$build/agentd" "$build/agentctl" "$bindir/"

say "installing $(basename "$unit") to $unitdir"
install -d -m 0755 "$unitdir"
install -m 0644 "$unit" "$unitdir/agentd.service"

install -d -m 0750 "${owner[@]}" "$confdir"
if [ -e "$confdir/agentd.toml" ]; then
	say "keeping the existing $confdir/agentd.toml"
else
	say "writing $confdir/agentd.toml (every setting documented; edit [ollama] model first)"
	install -m 0640 "${owner[@]}" agentd.example.toml "$confdir/agentd.toml"
fi
if [ ! -e "$confdir/agentd.env" ]; then
	# Secrets for the chat bots and the HTTP listener go here, never in the config file
	# the unit can show. Their names are the ones the config in force reads (its
	# *token_env keys), so they cannot drift from what agentd looks for.
	{
		echo "# Secrets for agentd, one VAR=value per line (mode 0600); the unit reads them at start"
		echo "# (systemctl restart agentd after a change). Set those of what agentd.toml enables:"
		awk '/^\[/ { sec = $0 }
			/^(bot_token_env|app_token_env|token_env) *= *"/ {
				split($0, q, "\""); key = $1
				ex = "..."; if (key == "bot_token_env") ex = "xoxb-..."; else if (key == "app_token_env") ex = "xapp-..."
				printf "# for %s %s:\n# %s=%s\n", sec, key, q[2], ex }' "$confdir/agentd.toml"
	} >"$build/agentd.env"
	install -m 0600 "${owner[@]}" "$build/agentd.env" "$confdir/agentd.env"
fi

if [ -z "$no_systemctl" ] && command -v systemctl >/dev/null 2>&1; then
	if [ "$mode" = user ]; then
		systemctl --user daemon-reload || say "systemctl --user daemon-reload failed; run it yourself"
	else
		systemctl daemon-reload || say "systemctl daemon-reload failed; run it yourself"
	fi
fi

if [ "$mode" = user ]; then
	cat >&2 <<EOF

Installed. Start agentd now and at every login:
  systemctl --user enable --now agentd
  loginctl enable-linger "\$USER"    # keep it running while you are logged out
Then: agentctl status     (add ~/.local/bin to PATH if your shell does not have it)
Logs: journalctl --user -u agentd -f
EOF
else
	cat >&2 <<EOF

Installed. Start agentd now and at every boot:
  sudo systemctl enable --now agentd
Then: sudo agentctl status
Logs: journalctl -u agentd -f
EOF
fi
