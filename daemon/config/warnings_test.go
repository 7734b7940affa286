package config

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// Settings that are valid but do nothing as written warn, with the line they are on:
// the Agent Protocol or allow_remote without a listener to use them, deny rules with
// checkpoints off (no second wall).
func TestSettingsThatDoNothingWarn(t *testing.T) {
	tests := []struct {
		name string
		toml string
		want []string // "LINE key" of each warning, in line order
	}{
		{"none_by_default", "", nil},
		{"agent_protocol_without_listen", "[http]\nagent_protocol = true\n", []string{"2 http.agent_protocol"}},
		{"agent_protocol_with_listen", "[http]\nlisten = \"127.0.0.1:7070\"\nagent_protocol = true\n", nil},
		{"allow_remote_without_listen", "[http]\nallow_remote = true\n", []string{"2 http.allow_remote"}},
		{"allow_remote_on_loopback_v4", "[http]\nlisten = \"127.0.0.1:7070\"\nallow_remote = true\n", []string{"3 http.allow_remote"}},
		{"allow_remote_on_loopback_v6", "[http]\nlisten = \"[::1]:7070\"\nallow_remote = true\n", []string{"3 http.allow_remote"}},
		{"allow_remote_on_localhost", "[http]\nlisten = \"localhost:7070\"\nallow_remote = true\n", []string{"3 http.allow_remote"}},
		{"allow_remote_on_every_interface", "[http]\nlisten = \"0.0.0.0:7070\"\nallow_remote = true\n", nil},
		{"allow_remote_on_a_lan_address", "[http]\nlisten = \"192.168.1.5:7070\"\nallow_remote = true\n", nil},
		{"both", "[http]\nallow_remote = true\nagent_protocol = true\n", []string{"2 http.allow_remote", "3 http.agent_protocol"}},
		{"checkpoints_off_with_deny_rules", "[permissions]\ndeny = [\"write_file(*.toml)\"]\n[checkpoints]\nenabled = false\n", []string{"4 checkpoints.enabled"}},
		{"checkpoints_off_with_an_agents_deny_rules", "[agents.notes]\ndeny = [\"write_file(*.toml)\"]\n[checkpoints]\nenabled = false\n", []string{"4 checkpoints.enabled"}},
		{"checkpoints_off_without_deny_rules", "[checkpoints]\nenabled = false\n", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cleanEnv(t)
			path := filepath.Join(t.TempDir(), "agentd.toml")
			os.WriteFile(path, []byte(tt.toml), 0o600)
			cfg, warns, err := Load(path, nil)
			if err != nil || cfg == nil {
				t.Fatalf("a warning must not fail the config: %v", err)
			}
			var got []string
			for _, w := range warns {
				got = append(got, strconv.Itoa(w.Line)+" "+w.Key)
				if w.Msg == "" {
					t.Errorf("warning %s without a message", w.Key)
				}
			}
			if strings.Join(got, ",") != strings.Join(tt.want, ",") {
				t.Fatalf("warnings %q, want %q", got, tt.want)
			}
		})
	}
}

// TestWarningsBesideProblems: a config with problems still tells its warnings, so one
// --check-config shows everything.
func TestWarningsBesideProblems(t *testing.T) {
	cleanEnv(t)
	path := filepath.Join(t.TempDir(), "agentd.toml")
	os.WriteFile(path, []byte("[http]\nagent_protocol = true\ntoken_file = \"relative\"\n"), 0o600)
	cfg, warns, err := Load(path, nil)
	if err == nil || cfg != nil || !strings.Contains(err.Error(), "http.token_file") {
		t.Fatalf("Load = %v, want the token_file problem", err)
	}
	if len(warns) != 1 || warns[0].Key != "http.agent_protocol" || warns[0].Line != 2 {
		t.Fatalf("warnings %+v, want http.agent_protocol at line 2", warns)
	}
	if _, _, err := Load(path, nil); err == nil || strings.Contains(err.Error(), "agent_protocol") {
		t.Fatalf("Load = %v, want the problem alone, no warning in it", err)
	}
}
