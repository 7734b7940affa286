package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	ollama "github.com/ollama/ollama/api"

	"github.com/agentd/agentd/api"
	"github.com/agentd/agentd/internal/ollamatest"
	"github.com/agentd/agentd/internal/procgroup"
	"github.com/agentd/agentd/internal/testutil"
)

// TestSIGHUPToTheBinary builds agentd, runs it on a config file against a fake Ollama
// server, and reloads it the way systemctl reload does: a changed model and deny pattern
// apply to the steps begun after the SIGHUP with no agent lost, and a bad file is refused
// with the daemon running on as before.
func TestSIGHUPToTheBinary(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the agentd binary")
	}
	bin := buildAgentd(t)
	model := ollamatest.NewFake(t)
	model.SetModels("m1", "m2")
	var n atomic.Int64
	// Every step writes a file not written before: no repeat and progress at each step, so
	// continuous mode never stops to ask and the watchdog sees no loop.
	model.OnChat(func(*ollama.ChatRequest) (string, error) {
		return ollamatest.Reply("write_file", map[string]string{"path": fmt.Sprintf("d%d", n.Add(1)), "contents": "x"}), nil
	})
	model.SetDelay(3 * time.Millisecond)

	dir := t.TempDir()
	sockDir := testutil.ShortTempDir(t)
	cfgPath, logPath, sock := filepath.Join(dir, "agentd.toml"), filepath.Join(dir, "agentd.log"), filepath.Join(sockDir, "s")
	write := func(body string) {
		t.Helper()
		if err := os.WriteFile(cfgPath, []byte(fmt.Sprintf("[ollama]\nhost = %q\n", model.URL())+body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("model = \"m1\"\n")

	logf, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	defer logf.Close()
	cmd := exec.Command(bin, "--config", cfgPath, "--state-dir", filepath.Join(dir, "state"), "--socket", sock)
	cmd.Env = procgroup.Environ("AGENTD_", "OLLAMA_", "NOTIFY_SOCKET=")
	cmd.Stdout, cmd.Stderr = logf, logf
	grp, err := procgroup.Start(cmd)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		grp.End(syscall.SIGKILL, 0) // only if a check failed before SIGTERM
		if t.Failed() {
			b, _ := os.ReadFile(logPath)
			t.Logf("agentd log:\n%s", b[max(0, len(b)-8<<10):])
		}
	})
	alive := func() {
		t.Helper()
		if !grp.Running() {
			t.Fatalf("agentd exited: %v", cmd.ProcessState)
		}
	}

	c := &api.Client{Socket: sock}
	ctx := context.Background()
	waitFor := func(what string, ok func() bool) {
		t.Helper()
		testutil.Eventually(t, 20*time.Second, what, func() bool { alive(); return ok() })
	}
	waitFor("agentd to answer on its socket", func() bool { _, err := api.StatusRoute.Do(ctx, c, "", api.None{}); return err == nil })

	var ids []string
	for i := range 2 {
		a, err := api.CreateAgentRoute.Do(ctx, c, "", api.CreateAgentRequest{Name: fmt.Sprintf("busy-%d", i), Description: "d", Task: "list folders",
			Policy: &api.Policy{Mode: "continuous", ContinuousLimit: 1 << 30}})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, a.ID)
	}
	proposals := func(id string) []api.Proposal {
		t.Helper()
		ps, err := api.ProposalsRoute.Do(ctx, c, id, api.None{})
		if err != nil {
			t.Fatal(err)
		}
		sort.Slice(ps, func(i, j int) bool { return ps[i].Step < ps[j].Step })
		return ps
	}
	for _, id := range ids {
		waitFor("steps on m1", func() bool { return len(proposals(id)) >= 3 })
	}

	// A good change: the model, and a deny pattern that refuses every write (refused steps
	// make no progress; the watchdog's idle limit is its largest, as this is not its test).
	write("model = \"m2\"\n[permissions]\ndeny = [\"write_file(*)\"]\n[agent]\nwatchdog_idle_steps = 200\n")
	if err := cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	waitFor("the model to switch to m2", func() bool {
		st, err := api.StatusRoute.Do(ctx, c, "", api.None{})
		return err == nil && st.Ollama.Model == "m2"
	})
	before := map[string]int{}
	for _, id := range ids {
		before[id] = len(proposals(id))
	}
	for _, id := range ids {
		waitFor("steps after the reload", func() bool { return len(proposals(id)) >= before[id]+3 })
		ps := proposals(id)
		// A step begun before the SIGHUP may end after it; the ones after that are new.
		for _, p := range ps[before[id]+1 : before[id]+3] {
			if p.Model != "m2" || p.Status != api.ProposalFeedback {
				t.Errorf("agent %s step %d after the reload: model %q, status %s; want m2 and refused by the deny pattern",
					id, p.Step, p.Model, p.Status)
			}
		}
		for i, p := range ps {
			if p.Step != i+1 {
				t.Fatalf("agent %s: proposal %d is step %d: a step was dropped or taken twice", id, i+1, p.Step)
			}
		}
	}

	// A bad file: refused, the daemon keeps running on what it had.
	write("model = \"m1\"\nmax_context = 10\n[permissions]\nallow = [\"read_file(\"]\n")
	if err := cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	waitFor("the refusal in the log", func() bool {
		b, _ := os.ReadFile(logPath)
		return strings.Contains(string(b), "config reload refused")
	})
	b, _ := os.ReadFile(logPath)
	if !strings.Contains(string(b), "ollama.max_context") {
		t.Errorf("the refusal does not name ollama.max_context:\n%s", b)
	}
	st, err := api.StatusRoute.Do(ctx, c, "", api.None{})
	if err != nil || st.Ollama.Model != "m2" {
		t.Fatalf("after a refused reload: model %q (err %v), want m2 still", st.Ollama.Model, err)
	}
	for _, id := range ids {
		n := len(proposals(id))
		waitFor("steps after the refused reload", func() bool { return len(proposals(id)) >= n+2 })
		a, err := api.AgentRoute.Do(ctx, c, id, api.None{})
		if err != nil {
			t.Fatalf("agent %s lost: %v", id, err)
		}
		if a.State != api.StateThinking && a.State != api.StateExecuting {
			t.Errorf("agent %s is %s (%s), want it still stepping", a.Name, a.State, a.StateReason)
		}
	}

	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-grp.Done():
		if !cmd.ProcessState.Success() {
			t.Errorf("agentd exit after SIGTERM: %v, want 0", cmd.ProcessState)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("agentd did not stop on SIGTERM")
	}
	b, _ = os.ReadFile(logPath)
	if got := strings.Count(string(b), "config reloaded"); got != 1 {
		t.Errorf("%d reloads logged, want 1 (the bad file refused):\n%s", got, b)
	}
}

// buildAgentd builds this package's binary into a temp dir.
func buildAgentd(t *testing.T) string {
	t.Helper()
	goBin, err := exec.LookPath("go")
	if err != nil {
		goBin = filepath.Join(os.Getenv("GOROOT"), "bin", "go")
	}
	bin := filepath.Join(t.TempDir(), "agentd")
	start := time.Now()
	if out, err := exec.Command(goBin, "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/agentd: %v\n%s", err, out)
	}
	t.Logf("go build ./cmd/agentd: %v", time.Since(start).Round(time.Millisecond))
	return bin
}
