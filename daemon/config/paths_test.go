package config

import (
	"path/filepath"
	"testing"
)

func TestDefaultPaths(t *testing.T) {
	tests := []struct {
		name       string
		env        map[string]string
		wantState  string
		wantConfig string
	}{
		{"home_only", map[string]string{"HOME": "/home/u"},
			"/home/u/.local/state/agentd", "/home/u/.config/agentd/agentd.toml"},
		{"xdg", map[string]string{"HOME": "/home/u", "XDG_STATE_HOME": "/x/state", "XDG_CONFIG_HOME": "/x/config"},
			"/x/state/agentd", "/x/config/agentd/agentd.toml"},
		{"relative_xdg_ignored", map[string]string{"HOME": "/home/u", "XDG_STATE_HOME": "state", "XDG_CONFIG_HOME": "cfg"},
			"/home/u/.local/state/agentd", "/home/u/.config/agentd/agentd.toml"},
		{"systemd", map[string]string{"HOME": "/home/u", "XDG_STATE_HOME": "/x/state",
			"STATE_DIRECTORY": "/var/lib/agentd:/var/lib/other", "CONFIGURATION_DIRECTORY": "/etc/agentd"},
			"/var/lib/agentd", "/etc/agentd/agentd.toml"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, k := range []string{"HOME", "XDG_STATE_HOME", "XDG_CONFIG_HOME", "STATE_DIRECTORY", "CONFIGURATION_DIRECTORY"} {
				t.Setenv(k, tt.env[k])
			}
			if got := DefaultStateDir(); got != tt.wantState {
				t.Errorf("DefaultStateDir() = %q, want %q", got, tt.wantState)
			}
			if got := DefaultConfigPath(); got != tt.wantConfig {
				t.Errorf("DefaultConfigPath() = %q, want %q", got, tt.wantConfig)
			}
		})
	}
}

func TestWorkspaceRoot(t *testing.T) {
	c := &Config{StateDir: "/s"}
	if got := c.WorkspaceRoot(); got != filepath.Join("/s", "workspaces") {
		t.Errorf("default WorkspaceRoot = %q", got)
	}
	c.Agent.WorkspaceRoot = "/w"
	if got := c.WorkspaceRoot(); got != "/w" {
		t.Errorf("WorkspaceRoot = %q, want /w", got)
	}
}
