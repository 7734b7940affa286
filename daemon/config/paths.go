package config

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// DefaultStateDir is where agentd keeps its state: systemd's $STATE_DIRECTORY when run as
// a service with StateDirectory=agentd, else $XDG_STATE_HOME/agentd, else
// ~/.local/state/agentd.
func DefaultStateDir() string {
	if d := firstDir("STATE_DIRECTORY"); d != "" {
		return d
	}
	return xdgDir("XDG_STATE_HOME", filepath.Join(".local", "state"), "/var/lib")
}

// DefaultConfigPath is where agentd looks for its config file: agentd.toml in systemd's
// $CONFIGURATION_DIRECTORY, else $XDG_CONFIG_HOME/agentd/agentd.toml, else
// ~/.config/agentd/agentd.toml. Unlike a path given with a flag, it may be missing.
func DefaultConfigPath() string {
	if d := firstDir("CONFIGURATION_DIRECTORY"); d != "" {
		return filepath.Join(d, "agentd.toml")
	}
	return filepath.Join(xdgDir("XDG_CONFIG_HOME", ".config", "/etc"), "agentd.toml")
}

// firstDir returns the first of the colon-separated directories systemd puts in env.
func firstDir(env string) string {
	d, _, _ := strings.Cut(os.Getenv(env), ":")
	return d
}

// xdgDir returns $env/agentd, or ~/home/agentd when env is unset or relative (the XDG
// spec says to ignore relative paths), or system/agentd when there is no home at all.
func xdgDir(env, home, system string) string {
	if d := os.Getenv(env); filepath.IsAbs(d) {
		return filepath.Join(d, "agentd")
	}
	if h, err := os.UserHomeDir(); err == nil && h != "" {
		return filepath.Join(h, home, "agentd")
	}
	if os.Getuid() == 0 {
		return filepath.Join(system, "agentd")
	}
	return filepath.Join(os.TempDir(), fmt.Sprintf("agentd-%d", os.Getuid()))
}
