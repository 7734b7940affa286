package server

import (
	"context"
	"errors"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/agentd/agentd/api"
	"github.com/agentd/agentd/commands/shell"
	"github.com/agentd/agentd/daemon/config"
	"github.com/agentd/agentd/internal/ollamatest"
)

// TestSandboxCheck checks what doctor and status say about the sandbox: a failure with
// the fix when no sandbox works in mode auto (the commands are refused) or the network is
// granted without slirp4netns, a warning in mode none, and the sandbox in force otherwise.
func TestSandboxCheck(t *testing.T) {
	bwrapPath, bwrapErr := shell.CheckSandbox(shell.Options{Sandbox: shell.SandboxBwrap})
	tests := []struct {
		name     string
		sandbox  string
		path     string // PATH for the daemon: where bwrap is looked up
		status   string
		detail   string
		fix      string
		confined bool
		needs    bool // a working bwrap on this machine
		network  bool
	}{
		{name: "auto_without_bwrap", sandbox: "auto", path: t.TempDir(), status: api.CheckFail,
			detail: "are refused: no sandbox works here (bwrap is not installed", fix: "apt-get install bubblewrap"},
		{name: "none", sandbox: "none", status: api.CheckWarn, detail: `runs unconfined ([shell] sandbox = "none")`, fix: `sandbox = "auto"`},
		{name: "auto_with_bwrap", sandbox: "auto", status: api.CheckOK, detail: "runs in bubblewrap (", confined: true, needs: true},
		{name: "network_without_slirp4netns", sandbox: "auto", network: true, path: "bwrap only", status: api.CheckFail,
			detail: "network granted but refused: slirp4netns is not installed", fix: "apt-get install slirp4netns", confined: true, needs: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.needs && bwrapErr != nil {
				t.Skipf("no working bwrap here: %v", bwrapErr)
			}
			if tt.path == "bwrap only" {
				tt.path = t.TempDir()
				if err := os.Symlink(bwrapPath, filepath.Join(tt.path, "bwrap")); err != nil {
					t.Fatal(err)
				}
			}
			if tt.path != "" {
				t.Setenv("PATH", tt.path)
			}
			cfg := config.Default()
			cfg.Shell.Enabled, cfg.Shell.Sandbox, cfg.Shell.Network = true, tt.sandbox, tt.network
			c := sandboxCheck(cfg)
			if c.Status != tt.status || !strings.Contains(c.Detail, tt.detail) || !strings.Contains(c.Fix, tt.fix) {
				t.Errorf("check %+v; want %s, detail with %q, fix with %q", c, tt.status, tt.detail, tt.fix)
			}
			st := shellStatus(cfg, nil)
			if !st.Enabled || st.Confined != tt.confined || !strings.Contains(c.Detail, st.Sandbox) {
				t.Errorf("status %+v; want enabled, confined %v, the sandbox doctor names", st, tt.confined)
			}
			cmds, err := shellCommands(cfg, nil, slog.New(slog.DiscardHandler))
			if err != nil || len(cmds) == 0 {
				t.Fatalf("shellCommands: %v, %v; want the commands built (refusing when unconfinable)", cmds, err)
			}
		})
	}
	cfg := config.Default()
	if st := shellStatus(cfg, nil); st != (api.ShellStatus{}) {
		t.Errorf("shell off: status %+v; want the zero value", st)
	}
}

// TestSandboxHidesTokenFiles checks that every token file the config names is hidden in
// the sandbox, and that unset ones add nothing.
func TestSandboxHidesTokenFiles(t *testing.T) {
	cfg := config.Default()
	cfg.Slack.BotTokenFile = "/etc/slack-bot-token"
	cfg.Discord.TokenFile = "/srv/secrets//discord"
	cfg.HTTP.TokenFile = "/etc/agentd-http-token"
	got := strings.Join(shellOptions(cfg).HidePaths, " ")
	if want := "/etc/slack-bot-token /srv/secrets/discord /etc/agentd-http-token"; got != want {
		t.Errorf("hidden paths = %q, want %q", got, want)
	}
}

// Doctor and status say how each agent's programs are bounded together: with a cgroup
// per agent, every bound; without, a warning naming what is weaker and the fix.
func TestLimitsCheck(t *testing.T) {
	cfg := config.Default()
	cfg.Shell.Enabled = true
	var none *shell.Boxes // what a daemon without [shell] cgroups describes
	c := limitsCheck(none)
	if c.Status != api.CheckWarn || !strings.Contains(c.Detail, "fork bomb") || c.Fix != shell.BoxesFix {
		t.Errorf("without cgroups: %+v; want a warning saying what is weaker, with the fix", c)
	}
	if st := shellStatus(cfg, none); st.LimitsPerAgent || st.Limits != c.Detail {
		t.Errorf("without cgroups: status %+v; want the same line as doctor, not per agent", st)
	}
	boxes := shell.NewBoxes(shellLimits(cfg))
	defer boxes.Close()
	if !boxes.Active() {
		t.Skipf("no cgroups here: %s", c.Detail)
	}
	c = limitsCheck(boxes)
	if _, full := boxes.Describe(); full && (c.Status != api.CheckOK || !strings.Contains(c.Detail, "at most 256 processes") || !strings.Contains(c.Detail, "2 GiB of memory in all")) {
		t.Errorf("with cgroups: %+v; want OK with the bounds", c)
	}
}

// TestTokenFileCheck: real token files with real modes. One that group or others may
// read or write fails, naming the file, its key, its mode and the chmod that fixes it.
func TestTokenFileCheck(t *testing.T) {
	for _, tc := range []struct {
		name    string
		mode    os.FileMode // of the Slack bot token file; 0: it does not exist
		enabled bool
		want    string // status, then what the detail and the fix name ("|" between)
	}{
		{"private", 0o600, true, "ok mode 0600|"},
		{"owner_read_only", 0o400, true, "ok mode 0400|"},
		{"world_readable", 0o644, true, "fail $ (slack.bot_token_file) has mode 0644|chmod 600 $"},
		{"group_readable", 0o640, true, "fail has mode 0640|chmod 600 $"},
		{"others_writable", 0o602, true, "fail has mode 0602|chmod 600 $"},
		{"open_while_the_bot_is_off", 0o644, false, "fail has mode 0644|chmod 600 $"},
		{"missing_is_said_by_the_bots_check", 0, true, ""},
		{"missing_while_the_bot_is_off", 0, false, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "slack-bot.token")
			if tc.mode != 0 {
				if err := os.WriteFile(path, []byte("xoxb-test"), 0o600); err != nil {
					t.Fatal(err)
				}
				if err := os.Chmod(path, tc.mode); err != nil {
					t.Fatal(err)
				}
			}
			cfg := config.Default()
			cfg.Slack.Enabled, cfg.Slack.BotTokenFile = tc.enabled, path
			checks := tokenFileCheck(cfg)(context.Background())
			if tc.want == "" {
				if len(checks) != 0 {
					t.Fatalf("checks = %+v, want none", checks)
				}
				return
			}
			if len(checks) != 1 {
				t.Fatalf("checks = %+v, want one", checks)
			}
			c := checks[0]
			status, names, _ := strings.Cut(strings.ReplaceAll(tc.want, "$", path), " ")
			inDetail, inFix, _ := strings.Cut(names, "|")
			if c.Status != status || !strings.Contains(c.Detail, inDetail) || !strings.Contains(c.Fix, inFix) {
				t.Errorf("check = %+v\nwant %s, naming %q and %q", c, status, inDetail, inFix)
			}
			if strings.Contains(c.Detail+c.Fix, "xoxb-test") {
				t.Errorf("the check shows the token: %+v", c)
			}
		})
	}
	if tokenFileCheck(config.Default()) != nil {
		t.Error("a config without token files has a token file check")
	}
}

// TestStartMakesTheStateDirPrivate: a state dir an older agentd left 0755, with a 0644
// database, is 0700 with 0600 files once the daemon is up, the database's WAL included;
// an agent's workspace file keeps its mode.
func TestStartMakesTheStateDirPrivate(t *testing.T) {
	old := syscall.Umask(0o022)
	defer syscall.Umask(old)
	model := ollamatest.NewFake(t)
	cfg := testConfig(t, model, "http://127.0.0.1:1/api/")
	cfg.Slack.Enabled = false
	ws := filepath.Join(cfg.StateDir, "workspaces", "a-1")
	if err := os.MkdirAll(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	for path, mode := range map[string]fs.FileMode{
		filepath.Join(cfg.StateDir, "agentd.db"): 0o644,
		filepath.Join(ws, "run.sh"):              0o755,
	} {
		if err := os.WriteFile(path, nil, mode); err != nil {
			t.Fatal(err)
		}
	}
	for _, dir := range []string{cfg.StateDir, filepath.Join(cfg.StateDir, "workspaces")} {
		if err := os.Chmod(dir, 0o755); err != nil {
			t.Fatal(err)
		}
	}

	stop := runDaemon(t, cfg, slog.New(slog.DiscardHandler))
	defer stop()
	for path, want := range map[string]fs.FileMode{
		cfg.StateDir:                                  0o700,
		filepath.Join(cfg.StateDir, "agentd.db"):      0o600,
		filepath.Join(cfg.StateDir, "agentd.db-wal"):  0o600,
		filepath.Join(cfg.StateDir, "workspaces"):     0o700,
		filepath.Join(cfg.StateDir, "workspaces/a-1"): 0o755,
		filepath.Join(ws, "run.sh"):                   0o755,
	} {
		fi, err := os.Stat(path)
		if err != nil {
			t.Error(err)
			continue
		}
		if got := fi.Mode().Perm(); got != want {
			t.Errorf("%s: mode %04o, want %04o", path, got, want)
		}
	}
}

// TestSocketRefusesAgentCommands: with the hook saying every peer is a command an agent
// runs, the socket answers 403 and the reason; the hook is asked about this process.
func TestSocketRefusesAgentCommands(t *testing.T) {
	model := ollamatest.NewFake(t)
	cfg := testConfig(t, model, "http://127.0.0.1:1/api/")
	cfg.Slack.Enabled = false
	asked := make(chan int32, 4)
	stop := runDaemonWith(t, cfg, slog.New(slog.DiscardHandler), Options{IsAgentCommand: func(pid int32) bool { asked <- pid; return true }})
	defer stop()
	_, err := api.StatusRoute.Do(context.Background(), &api.Client{Socket: cfg.Socket}, "", api.None{})
	if !errors.Is(err, api.ErrForbidden) || !strings.Contains(err.Error(), "requests from commands an agent runs are refused") {
		t.Fatalf("Status = %v, want 403 refusing an agent's command", err)
	}
	if pid := <-asked; pid != int32(os.Getpid()) {
		t.Errorf("the hook was asked about pid %d, want %d", pid, os.Getpid())
	}
}
