package config

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentd/agentd/internal/testutil"
)

// cleanEnv unsets what Default reads, so results do not depend on the machine.
func cleanEnv(t *testing.T) {
	t.Helper()
	for _, k := range []string{"OLLAMA_HOST", "AGENTD_SOCKET", "RUNTIME_DIRECTORY", "STATE_DIRECTORY"} {
		t.Setenv(k, "")
	}
}

// TestLoadGolden loads each testdata/config/*.toml and compares the error text with the
// .err file beside it (empty: the file is valid). Run with -update to rewrite them.
func TestLoadGolden(t *testing.T) {
	cleanEnv(t)
	files, err := filepath.Glob(filepath.Join("testdata", "config", "*.toml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no golden configs: %v", err)
	}
	for _, file := range files {
		name := strings.TrimSuffix(filepath.Base(file), ".toml")
		t.Run(name, func(t *testing.T) {
			var got string
			if _, _, err := Load(file, nil); err != nil {
				got = err.Error() + "\n"
			}
			testutil.Golden(t, strings.TrimSuffix(file, ".toml")+".err", []byte(got))
		})
	}
}

func TestLoadSetsEveryKey(t *testing.T) {
	cleanEnv(t)
	c, _, err := Load(filepath.Join("testdata", "config", "valid_every_key.toml"), nil)
	if err != nil {
		t.Fatal(err)
	}
	keep := Duration{-time.Second}
	want := Default()
	want.Ollama = OllamaConfig{HostFrom: HostFromConfig, Model: "llama3.2:3b",
		SmartModel: "qwen2.5:14b", RequestTimeout: Duration{2 * time.Minute}, MaxContext: 4096, KeepAlive: &keep,
		Hosts: []OllamaHost{{URL: "http://127.0.0.1:11434", Slots: 2}, {URL: "gpu-box:11434", Models: []string{"llama3.2:3b", "qwen2.5:14b"}}}}
	want.Agent = AgentConfig{Constraints: []string{}, Resources: []string{"The web."},
		BestPractices: []string{"Be brief."}, Commands: []string{"read_file", "ask_user", "finish"},
		MaxInvalidReplies: 5, WatchdogFailures: 4, WatchdogIdleSteps: 12, ContinuousLimit: 100, CommandTimeout: Duration{5 * time.Minute},
		OutputCap: 4096, WorkspaceRoot: "/srv/ws", HistoryEpisodes: 3, // and effect_preview = false
		DisabledComponents: []string{"clock"}, MaxHelperDepth: 1, MaxHelpers: 3,
		MaxSteps: 500, MaxTokens: 1000000, MaxTime: Duration{8 * time.Hour}, MaxDisk: 20 << 30}
	want.Permissions = PermissionsConfig{Allow: []string{"read_file(*)", "execute_shell(git status*)"}, Deny: []string{"delete_file(*)"}, AutoRead: true}
	want.Agents = map[string]AgentOverride{"notes": {Commands: []string{"read_file", "write_file", "ask_user", "finish"},
		DisabledComponents: []string{"web"}, Allow: []string{"write_file(notes/*)"}, Deny: []string{"write_file(secret*)"},
		MaxSteps: new(50), MaxTokens: new(int64(20000)), MaxTime: &Duration{30 * time.Minute}, MaxDisk: new(Size(512 << 20)),
		WatchdogFailures: new(2), WatchdogIdleSteps: new(20), EffectPreview: new(true)}}
	want.WebCommands = WebCommandsConfig{SearxngURL: "http://127.0.0.1:8888", DuckDuckGo: true, AllowPrivate: true, MaxPageBytes: 65536, Timeout: Duration{5 * time.Second}}
	want.Shell = ShellConfig{Enabled: true, Sandbox: "bwrap", Network: true, UID: 1500, GID: 1501, Env: []string{"GOPATH"},
		Procs: 128, Memory: 4 << 30, CPUPercent: 150}
	want.MCP = MCPConfig{Servers: []MCPServer{
		{Name: "files", Command: []string{"mcp-files", "--root", "/srv"}, Env: map[string]string{"MODE": "ro"}, Timeout: Duration{30 * time.Second}},
		{Name: "tracker", URL: "http://127.0.0.1:8931/mcp"},
	}}
	want.Schedules = SchedulesConfig{Grace: Duration{2 * time.Minute}, KeepAgents: 4}
	want.Teams = TeamsConfig{Dir: "/srv/agentd/teams"}
	want.Memory = MemoryConfig{Enabled: false, K: 5, BudgetTokens: 1200, HalfLife: Duration{720 * time.Hour}, EmbedModel: "nomic-embed-text"}
	want.Checkpoints = CheckpointsConfig{Enabled: false, Keep: 20, KeepSteps: 5, MaxBytes: 256 << 20, MaxFileBytes: 8 << 20, MaxEntries: 50_000, MinFreeBytes: 64 << 20}
	want.Bots = BotsConfig{ApproveCount: 5, DecisionExpiry: Duration{time.Hour}}
	want.Slack = SlackConfig{Enabled: true, BotTokenEnv: "MY_SLACK_BOT", BotTokenFile: "/etc/agentd/bot", AppTokenEnv: "MY_SLACK_APP",
		AppTokenFile: "/etc/agentd/app", Teams: []string{"T0123ABCD"}, Approvers: []string{"U0123ABCD", "S0456EFGH"}, DirectMessages: true,
		Channels: map[string]ChatAccess{"C0123ABCD": {Approvers: []string{"U0999ZZZZ"}}, "C0456EFGH": {}},
		Agents:   map[string]ChatAccess{"deployer": {Approvers: []string{"U0777AAAA"}}}, APIURL: "http://127.0.0.1:9999/api/"}
	want.Discord = DiscordConfig{Enabled: true, TokenEnv: "MY_DISCORD_BOT", TokenFile: "/etc/agentd/discord", ApplicationID: "123456789012345678",
		Guilds: []string{"223456789012345678"}, Approvers: []string{"323456789012345678"}, ApproverRoles: []string{"423456789012345678"},
		DirectMessages: true, Channels: map[string]DiscordAccess{
			"523456789012345678": {Approvers: []string{"623456789012345678"}, ApproverRoles: []string{"723456789012345678"}}, "823456789012345678": {}},
		Agents: map[string]DiscordAccess{"deployer": {ApproverRoles: []string{"923456789012345678"}}}, APIURL: "http://127.0.0.1:9998/"}
	want.HTTP = HTTPConfig{Listen: "[::1]:7070", TokenEnv: "MY_HTTP_TOKEN", TokenFile: "/etc/agentd/http-token", AgentProtocol: true}
	want.Log = LogConfig{Level: "debug", Format: "json"}
	if !reflect.DeepEqual(c, want) {
		t.Errorf("Load =\n%+v\nwant\n%+v", c, want)
	}
	// The golden file must set every key, or this test proves less than it says.
	data, _ := os.ReadFile(filepath.Join("testdata", "config", "valid_every_key.toml"))
	for _, key := range Keys() {
		if leaf := key[strings.Index(key, ".")+1:]; !regexp.MustCompile(`(?m)^(` + leaf + ` = |\[\[` + regexp.QuoteMeta(key) + `\]\])`).Match(data) {
			t.Errorf("valid_every_key.toml does not set %s", key)
		}
	}
}

func TestLoadWithoutFile(t *testing.T) {
	cleanEnv(t)
	c, _, err := Load("", nil)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(c, Default()) {
		t.Errorf("Load(\"\") = %+v, want the defaults", c)
	}
}

func TestLoadMissingFileNamed(t *testing.T) {
	path := filepath.Join(t.TempDir(), "nope.toml")
	_, _, err := Load(path, nil)
	if err == nil || !strings.Contains(err.Error(), path) || !os.IsNotExist(unwrapAll(err)) {
		t.Errorf("Load(missing) error = %v, want a not-exist error naming the path", err)
	}
}

func unwrapAll(err error) error {
	for {
		u, ok := err.(interface{ Unwrap() error })
		if !ok || u.Unwrap() == nil {
			return err
		}
		err = u.Unwrap()
	}
}

// TestExampleFile keeps agentd.example.toml honest: it loads, it is the defaults, and it
// mentions every key in its section, set or commented out.
func TestExampleFile(t *testing.T) {
	cleanEnv(t)
	const path = "../../agentd.example.toml"
	c, _, err := Load(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(c, Default()) {
		t.Errorf("the example differs from Default():\n%+v\n%+v", c, Default())
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	sections := regexp.MustCompile(`(?m)^\[(\w+)\]$`).FindAllSubmatchIndex(data, -1)
	body := map[string]string{}
	for i, s := range sections {
		end := len(data)
		if i+1 < len(sections) {
			end = sections[i+1][0]
		}
		body[string(data[s[2]:s[3]])] = string(data[s[1]:end])
	}
	for _, key := range Keys() {
		sec, leaf, _ := strings.Cut(key, ".")
		if !regexp.MustCompile(`(?m)^(# )?` + leaf + ` = `).MatchString(body[sec]) {
			t.Errorf("the example does not document %s", key)
		}
	}
}

func TestDefaultIsValid(t *testing.T) {
	cleanEnv(t)
	if err := Default().Validate(); err != nil {
		t.Error(err)
	}
}

func TestValidateListsEveryProblem(t *testing.T) {
	cleanEnv(t)
	c := Default()
	c.Ollama.Model = ""
	c.Log.Format = "xml"
	c.Agent.OutputCap = -1
	want := `config: 3 problems:
  agent.output_cap: must be at least 1, got -1
  log.format: "xml" is not one of text, json
  ollama.model: empty; name the model to use, like "qwen2.5:3b"`
	if err := c.Validate(); err == nil || err.Error() != want {
		t.Errorf("Validate() = %v\nwant %s", err, want)
	}
}

func TestOllamaHostFromEnv(t *testing.T) {
	tests := []struct{ name, env, want string }{
		{"unset", "", "http://127.0.0.1:11434"},
		{"bare_ip", "0.0.0.0", "http://0.0.0.0:11434"},
		{"host_and_port", "gpu:8080", "http://gpu:8080"},
		{"port_only", ":11434", "http://127.0.0.1:11434"},
		{"ipv6", "[::1]", "http://[::1]:11434"},
		{"full_url_gets_its_port", "https://ollama.example/api", "https://ollama.example:443/api"},
		{"quoted", `"gpu:1"`, "http://gpu:1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("OLLAMA_HOST", tt.env)
			if got := Default().Ollama.Hosts[0].URL; got != tt.want {
				t.Errorf("host = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestDuration(t *testing.T) {
	tests := []struct{ name, in, want, wantErr string }{
		{"seconds", "90s", "1m30s", ""},
		{"compound", "1h30m", "1h30m0s", ""},
		{"negative", "-1s", "-1s", ""},
		{"no_unit", "90", "", `bad duration "90": want a number and a unit, like "90s", "10m" or "1h30m"`},
		{"words", "soon", "", `bad duration "soon": want a number and a unit, like "90s", "10m" or "1h30m"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var d Duration
			err := d.UnmarshalText([]byte(tt.in))
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr {
					t.Errorf("error = %v, want %s", err, tt.wantErr)
				}
				return
			}
			if err != nil || d.String() != tt.want {
				t.Errorf("= %s, %v; want %s", d, err, tt.want)
			}
			if b, _ := d.MarshalText(); string(b) != tt.want {
				t.Errorf("MarshalText = %s", b)
			}
		})
	}
}

func TestLogLevel(t *testing.T) {
	for _, tt := range []struct{ name, level, want string }{
		{"debug", "debug", "DEBUG"}, {"warn", "warn", "WARN"}, {"error", "error", "ERROR"},
		{"info", "info", "INFO"}, {"unknown_is_info", "loud", "INFO"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := (LogConfig{Level: tt.level}).SlogLevel().String(); got != tt.want {
				t.Errorf("SlogLevel(%q) = %s, want %s", tt.level, got, tt.want)
			}
		})
	}
}

// HostFrom says where the Ollama host came from: the file, $OLLAMA_HOST, or neither.
func TestLoadSaysWhereTheOllamaHostCameFrom(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	withHost := write("host.toml", "[ollama]\nhost = \"http://box:11434\"\n")
	withPool := write("pool.toml", "[[ollama.hosts]]\nurl = \"http://box:11434\"\n")
	without := write("none.toml", "[ollama]\nmodel = \"m\"\n")
	for _, tc := range []struct{ name, env, path, want string }{
		{"file_host", "http://env:11434", withHost, HostFromConfig},
		{"file_pool", "", withPool, HostFromConfig},
		{"env", "http://env:11434", without, HostFromEnv},
		{"default", "", without, HostFromDefault},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("OLLAMA_HOST", tc.env)
			c, _, err := Load(tc.path, nil)
			if err != nil {
				t.Fatal(err)
			}
			if c.Ollama.HostFrom != tc.want {
				t.Errorf("HostFrom = %q, want %q", c.Ollama.HostFrom, tc.want)
			}
		})
	}
}

// Keys returns every key the file may set, dotted ("ollama.model"), sorted.
func Keys() []string {
	var keys []string
	for sec, fs := range Default().fields() {
		for k := range fs {
			keys = append(keys, sec+"."+k)
		}
	}
	sort.Strings(keys)
	return keys
}

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

// TestLoggerEscapesText checks both formats, at the configured level and at a level that
// may change: a command name or an error carrying ESC, a newline or U+202E cannot forge a
// log line or reorder it.
func TestLoggerEscapesText(t *testing.T) {
	for _, format := range []string{"text", "json"} {
		for _, level := range []*slog.LevelVar{nil, new(slog.LevelVar)} {
			t.Run(fmt.Sprintf("%s_level_var_%t", format, level != nil), func(t *testing.T) {
				var b bytes.Buffer
				l := LogConfig{Format: format, Level: "info"}
				log := l.Logger(&b, level)
				log.With("agent", "bob\u202e").Info("ran \x1b[2J", "command", "ls\nlevel=ERROR msg=forged",
					"err", errors.New("no\u200bpe"))
				out := b.String()
				if strings.Count(out, "\n") != 1 {
					t.Fatalf("one record made %d lines:\n%s", strings.Count(out, "\n"), out)
				}
				for _, raw := range []string{"\x1b", "\u202e", "\u200b"} {
					if strings.Contains(out, raw) {
						t.Errorf("log keeps %q raw: %s", raw, out)
					}
				}
				if !strings.Contains(out, `u202e`) || !strings.Contains(out, `x1b[2J`) {
					t.Errorf("log lacks the escapes: %s", out)
				}
			})
		}
	}
}

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
