package config

import (
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentd/agentd/internal/testutil"
)

func TestOllamaHostsValidate(t *testing.T) {
	cleanEnv(t)
	for _, tc := range []struct {
		name  string
		set   func(o *OllamaConfig)
		wants []string // each must appear in the error; none: valid
	}{
		{"default_one_host", func(o *OllamaConfig) {}, nil},
		{"two_hosts", func(o *OllamaConfig) {
			o.Hosts = []OllamaHost{{URL: "127.0.0.1:11434", Slots: 2}, {URL: "http://gpu:11434", Models: []string{"qwen2.5:3b"}}}
		}, nil},
		{"bad_url", func(o *OllamaConfig) { o.Hosts = []OllamaHost{{URL: "ftp://x"}} }, []string{`ollama.hosts.1: url "ftp://x" is not a URL`}},
		{"port_out_of_range", func(o *OllamaConfig) { o.Hosts = []OllamaHost{{URL: "gpu:70000"}} }, []string{`ollama.hosts.1: url "gpu:70000" is not a URL`}},
		{"missing_url", func(o *OllamaConfig) { o.Hosts = []OllamaHost{{Slots: 2}} }, []string{`ollama.hosts.1: url "" is not a URL`}},
		{"same_server_twice", func(o *OllamaConfig) {
			o.Hosts = []OllamaHost{{URL: "127.0.0.1:11434"}, {URL: "http://127.0.0.1:11434"}}
		}, []string{"ollama.hosts.2: url \"http://127.0.0.1:11434\" is host 1 too: list each server once and give it more slots instead"}},
		{"too_many_slots", func(o *OllamaConfig) { o.Hosts = []OllamaHost{{URL: "a:1", Slots: 65}} }, []string{"ollama.hosts.1: slots must be between 1 and 64"}},
		{"model_with_space", func(o *OllamaConfig) { o.Hosts = []OllamaHost{{URL: "a:1", Models: []string{"qwen 2"}}} },
			[]string{`ollama.hosts.1: models item 1: "qwen 2" is not a model name`}},
		{"no_host_serves_the_model", func(o *OllamaConfig) { o.Hosts = []OllamaHost{{URL: "a:1", Models: []string{"other"}}} },
			[]string{`ollama.hosts: no host serves ollama.model "qwen2.5:3b"`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := Default()
			c.Ollama.Model = "qwen2.5:3b"
			tc.set(&c.Ollama)
			err := c.Validate()
			if len(tc.wants) == 0 {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil {
				t.Fatal("valid; want a problem")
			}
			for _, w := range tc.wants {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
		})
	}
}

func TestPoolHosts(t *testing.T) {
	cleanEnv(t)
	o := Default().Ollama
	if got, want := o.PoolHosts(), []OllamaHost{{URL: DefaultOllamaHost, Slots: 1}}; !reflect.DeepEqual(got, want) {
		t.Errorf("without [[ollama.hosts]]: %+v, want %+v", got, want)
	}
	o.Hosts = []OllamaHost{{URL: "a:1"}, {URL: "b:1", Slots: 3, Models: []string{"m"}}}
	want := []OllamaHost{{URL: "a:1", Slots: 1}, {URL: "b:1", Slots: 3, Models: []string{"m"}}}
	if got := o.PoolHosts(); !reflect.DeepEqual(got, want) {
		t.Errorf("with [[ollama.hosts]]: %+v, want %+v", got, want)
	}
}

// TestOldOllamaHostKeys: [ollama] host and slots, the old form, are read as the one
// [[ollama.hosts]] table they meant, checked as strictly as before, with a warning naming
// the new form; beside [[ollama.hosts]] they are unused, and said so.
func TestOldOllamaHostKeys(t *testing.T) {
	cleanEnv(t)
	for _, tc := range []struct {
		name, file string
		hosts      []OllamaHost
		warn, err  string
	}{
		{"host_and_slots", "[ollama]\nhost = \"http://box:11434\"\nslots = 4\n", []OllamaHost{{URL: "http://box:11434", Slots: 4}},
			`line 2: ollama.host: [ollama] host and slots are the old form of one [[ollama.hosts]] table: write an [[ollama.hosts]] table with url = "http://box:11434" and slots = 4 instead`, ""},
		{"slots_alone", "[ollama]\nslots = 2\n", []OllamaHost{{URL: DefaultOllamaHost, Slots: 2}}, "[[ollama.hosts]] table", ""},
		{"slots_zero", "[ollama]\nslots = 0\n", nil, "", "line 2: ollama.slots: must be between 1 and 64"},
		{"host_not_a_string", "[ollama]\nhost = 3\n", nil, "", "line 2: ollama.host: want a string, got a whole number"},
		{"unused_beside_hosts", "[ollama]\nhost = \"http://other:11434\"\n\n[[ollama.hosts]]\nurl = \"a:1\"\n", []OllamaHost{{URL: "a:1"}},
			"line 2: ollama.host: unused: [[ollama.hosts]] is set, so calls go to its hosts only; add http://other:11434 there", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "agentd.toml")
			if err := os.WriteFile(path, []byte(tc.file), 0o600); err != nil {
				t.Fatal(err)
			}
			c, warns, err := Load(path, nil)
			if testutil.WantErr(t, err, tc.err) {
				return
			}
			if !reflect.DeepEqual(c.Ollama.Hosts, tc.hosts) {
				t.Errorf("hosts %+v, want %+v", c.Ollama.Hosts, tc.hosts)
			}
			if tc.warn == "" {
				if len(warns) != 0 {
					t.Errorf("warnings %v, want none", warns)
				}
				return
			}
			if len(warns) != 1 || !strings.Contains(warns[0].String(), tc.warn) {
				t.Errorf("warnings %v, want one saying %q", warns, tc.warn)
			}
		})
	}
}

func TestOllamaHostsChanges(t *testing.T) {
	cleanEnv(t)
	old, cur := Default(), Default()
	cur.Ollama.Hosts = []OllamaHost{{URL: "a:1", Slots: 2}}
	got := Changes(old, cur)
	if !reflect.DeepEqual(got, []string{"ollama.hosts"}) {
		t.Errorf("Changes = %v, want ollama.hosts (it needs a restart)", got)
	}
	// An [[ollama.hosts]] list with the same tables is no change.
	old.Ollama.Hosts = []OllamaHost{{URL: "a:1", Slots: 2}}
	if got := Changes(old, cur); len(got) != 0 {
		t.Errorf("Changes = %v, want none", got)
	}
}

// TestOldWebSectionAndComponentOrder: [web] is read as [web_commands] and
// agent.component_order is ignored, each with a warning naming what to write instead;
// [web] beside [web_commands] is refused.
func TestOldWebSectionAndComponentOrder(t *testing.T) {
	cleanEnv(t)
	path := filepath.Join(t.TempDir(), "agentd.toml")
	write := func(s string) {
		if err := os.WriteFile(path, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("[agent]\ncomponent_order = [\"memory\"]\n\n[web]\nenabled = false\ntimeout = \"0s\"\n")
	if _, _, err := Load(path, nil); err == nil || !strings.Contains(err.Error(), "line 6: web_commands.timeout: must be more than 0") {
		t.Fatalf("Load = %v, want [web]'s bad timeout found at its line", err)
	}
	write("[agent]\ncomponent_order = [\"memory\"]\n\n[web]\nenabled = false\n")
	c, warns, err := Load(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if c.WebCommands.Enabled {
		t.Error("[web] enabled = false was not read as [web_commands]")
	}
	want := []string{"line 2: agent.component_order: no longer read", "line 4: [web] is the old name of [web_commands]: rename the section"}
	if len(warns) != len(want) {
		t.Fatalf("warnings %v, want %d", warns, len(want))
	}
	for i, w := range want {
		if !strings.Contains(warns[i].String(), w) {
			t.Errorf("warning %q does not say %q", warns[i], w)
		}
	}
	write("[web]\nenabled = false\n\n[web_commands]\nenabled = true\n")
	if _, _, err := Load(path, nil); err == nil || !strings.Contains(err.Error(), "move its keys into [web_commands]") {
		t.Errorf("Load = %v, want [web] beside [web_commands] refused", err)
	}
}

func TestWebConsoleListen(t *testing.T) {
	cleanEnv(t)
	tests := []struct {
		name, listen, want string
	}{
		{"default_loopback", "127.0.0.1:7077", ""},
		{"ipv6_loopback", "[::1]:0", ""},
		{"every_interface", "0.0.0.0:7077", "not a loopback IP"},
		{"empty_host", ":7077", "not a loopback IP"},
		{"a_name", "localhost:7077", "not a loopback IP"},
		{"no_port", "127.0.0.1", "is not host:port"},
		{"bad_port", "127.0.0.1:http", "not a number"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := Default()
			c.WebConsole.Listen = tt.listen
			err := c.Validate()
			if tt.want == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), "web_console.listen") || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("got %v, want a web_console.listen problem saying %q", err, tt.want)
			}
		})
	}
	if Default().WebConsole.Enabled {
		t.Error("the web console is on by default")
	}
}

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
