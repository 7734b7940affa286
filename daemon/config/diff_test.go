package config

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

func TestChanges(t *testing.T) {
	cleanEnv(t)
	load := func(t *testing.T, text string) *Config {
		t.Helper()
		path := filepath.Join(t.TempDir(), "agentd.toml")
		if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		c, _, err := Load(path, nil)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	base := `
[ollama]
model = "a"
[permissions]
allow = ["read_file(*)"]
[agents.bob]
deny = ["write_file(*)"]
[slack.channels.C0123ABCD]
approvers = ["U0123ABCD"]
`
	tests := []struct {
		name   string
		edit   string
		change func(*Config)
		want   []string
	}{
		{name: "same_file", edit: base, want: nil},
		{name: "defaults_spelled_out_are_no_change", edit: base + "[agent]\ndisabled_components = []\n", want: nil},
		{name: "model_and_allow", edit: `
[ollama]
model = "b"
[permissions]
allow = ["read_file(*)", "list_folder(*)"]
[agents.bob]
deny = ["write_file(*)"]
[slack.channels.C0123ABCD]
approvers = ["U0123ABCD"]
`, want: []string{"ollama.model", "permissions.allow"}},
		{name: "agent_table_added_and_changed", edit: base + "[agents.ann]\nallow = [\"finish\"]\n",
			change: func(c *Config) { c.Agents["bob"] = AgentOverride{Deny: []string{"write_file(x)"}} },
			want:   []string{"agents.ann", "agents.bob.deny"}},
		{name: "table_of_tables_is_one_key", edit: base + "[slack.channels.C0999ABCD]\n", want: []string{"slack.channels"}},
		{name: "keep_alive_and_flags", edit: base,
			change: func(c *Config) {
				c.Ollama.KeepAlive = &Duration{time.Minute}
				c.StateDir, c.Socket = "/elsewhere", "/elsewhere.sock"
			},
			want: []string{"ollama.keep_alive", "socket", "state_dir"}},
	}
	old := load(t, base)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := load(t, tt.edit)
			if tt.change != nil {
				tt.change(c)
			}
			if got := Changes(old, c); !slices.Equal(got, tt.want) {
				t.Errorf("Changes = %q, want %q", got, tt.want)
			}
		})
	}
}
