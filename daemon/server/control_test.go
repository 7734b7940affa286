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
	"github.com/agentd/agentd/internal/ollamatest"
)

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
