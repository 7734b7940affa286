package agent

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentd/agentd/api"
	"github.com/agentd/agentd/commands"
	"github.com/agentd/agentd/commands/shell"
	"github.com/agentd/agentd/daemon/store"
)

// realShell is execute_shell in a real bubblewrap sandbox, or a skip saying why there is
// none here (a failure under CI=true, where the scripts install bubblewrap).
func realShell(t *testing.T) commands.Command {
	t.Helper()
	return realShellWith(t, shell.Options{Network: true})
}

// realShellWith is realShell with the options o (its sandbox bwrap).
func realShellWith(t *testing.T, o shell.Options) commands.Command {
	t.Helper()
	bwrap, err := exec.LookPath("bwrap")
	if err == nil {
		_, err = shell.CheckSandbox(shell.Options{Sandbox: shell.SandboxBwrap, Bwrap: bwrap})
	}
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("no sandbox on this CI machine: %v", err)
		}
		t.Skipf("no sandbox here: %v", err)
	}
	o.Sandbox, o.Bwrap = shell.SandboxBwrap, bwrap
	c, err := shell.NewExecuteShell(o)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestUnaskedShellRunsBounded: a command a pattern approved runs with the workspace
// read-only (the decision says so), one whose pattern ends in +write may write, and a
// person's approval of the same line keeps the sandbox as configured; a deny rule on a
// path keeps it from the program under every approval.
func TestUnaskedShellRunsBounded(t *testing.T) {
	sh := realShell(t)
	h := newHarness(t, func(o *Options) {
		o.Components = []commands.Component{commands.CommandList{ID: "shell", Cmds: commands.Set{sh}}}
		o.Allow = []string{"execute_shell(touch by-pattern*)", "execute_shell(touch by-write-pattern*)+write"}
		o.Deny = []string{"read_file(secrets/*)"}
	})
	line := func(l string) string { return reply("execute_shell", map[string]string{"command_line": l}) }
	h.fake.Script(
		line("touch by-pattern"),       // 1 the pattern approves it: bounded, read-only
		line("touch by-write-pattern"), // 2 a +write pattern: bounded, writable
		line("touch by-person"),        // 3 asks: a person's y, the sandbox as configured
		line("cat secrets/key.txt"),    // 4 asks: y, yet the deny rule keeps the file away
		reply("finish", map[string]string{"reason": "done"}),
	)
	a := h.create(api.CreateAgentRequest{})
	ws := h.waitFor(a.ID, "a workspace", func(a *api.Agent) bool { return a.Workspace != "" }).Workspace
	os.MkdirAll(filepath.Join(ws, "secrets"), 0o755)
	os.WriteFile(filepath.Join(ws, "secrets", "key.txt"), []byte("KEY=hunter2\n"), 0o644)
	for _, answer := range []string{"y", "y", "y"} { // by-person, cat, finish
		p := h.pending(a.ID)
		if _, err := h.decide(a.ID, p, answer); err != nil {
			t.Fatal(err)
		}
	}
	h.waitFor(a.ID, "the run to end", func(a *api.Agent) bool { return a.State == api.StateIdle })
	for name, want := range map[string]bool{"by-pattern": false, "by-write-pattern": true, "by-person": true} {
		if _, err := os.Stat(filepath.Join(ws, name)); (err == nil) != want {
			t.Errorf("%s created = %v; want %v", name, err == nil, want)
		}
	}
	eps := h.history(a.ID)
	if len(eps) < 4 {
		t.Fatalf("history has %d episodes; want 4 or more", len(eps))
	}
	if !strings.Contains(eps[0].Result, "Read-only file system") {
		t.Errorf("the bounded run's result does not say the workspace was read-only: %q", eps[0].Result)
	}
	if strings.Contains(eps[3].Result, "hunter2") {
		t.Errorf("a path the deny rule covers reached the program: %q", eps[3].Result)
	}
	var decisions []api.Decision
	if err := h.st.View(t.Context(), func(tx *store.Tx) error {
		for _, e := range eps[:3] {
			d, err := tx.LastDecision(e.ProposalID)
			if err != nil {
				return err
			}
			decisions = append(decisions, *d)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	for i, want := range []string{api.ProfileBounded, api.ProfileBoundedWrite, ""} {
		if decisions[i].Profile != want {
			t.Errorf("step %d's decision (%s by %s) has profile %q; want %q", i+1, decisions[i].Source, decisions[i].By, decisions[i].Profile, want)
		}
	}
}
