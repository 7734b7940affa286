package shell

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentd/agentd/commands"
)

// TestCheckGivesExitStatusAndOutput: a check line runs as execute_shell does and its exit
// status comes back as a number beside its output; one killed says why.
func TestCheckGivesExitStatusAndOutput(t *testing.T) {
	bwrap := bwrapHere(t)
	c := mustShell(t, Options{Sandbox: SandboxBwrap, Bwrap: bwrap, OutputCap: 64}).(Checker)
	ws := workspace(t)
	env := commands.Env{Workspace: ws, AgentID: "a-test", Profile: commands.Profile{Bounded: true}}
	tests := []struct {
		name    string
		line    string
		timeout time.Duration
		exit    int
		output  string // in Output
		stopped string // in Stopped
	}{
		{"exit_zero_with_output", "echo found it", time.Minute, 0, "found it\n", ""},
		{"exit_one", "echo nothing; exit 1", time.Minute, 1, "nothing\n", ""},
		{"exit_status_kept", "exit 7", time.Minute, 7, "", ""},
		{"output_capped", "printf '%01000d' 0", time.Minute, 0, strings.Repeat("0", 64), ""},
		{"hang_is_cut", "echo started; sleep 600", 3 * time.Second, -1, "started", "time ran out"},
		{"flood_is_cut", "yes", time.Minute, -1, "y\ny\n", "more than"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), tt.timeout)
			defer cancel()
			r, err := c.Check(ctx, env, tt.line)
			if err != nil {
				t.Fatal(err)
			}
			if r.Exit != tt.exit || !strings.Contains(r.Output, tt.output) || !strings.Contains(r.Stopped, tt.stopped) ||
				(tt.stopped == "") != (r.Stopped == "") || len(r.Output) > 64 {
				t.Errorf("got exit %d, output %q, stopped %q; want exit %d, output with %q, stopped with %q",
					r.Exit, r.Output, r.Stopped, tt.exit, tt.output, tt.stopped)
			}
		})
	}
}

// TestCheckRefusals: an empty line or a NUL is refused before anything runs, and without
// a sandbox a bounded check is refused rather than run unconfined.
func TestCheckRefusals(t *testing.T) {
	ws := workspace(t)
	c := mustShell(t, Options{Sandbox: SandboxNone}).(Checker)
	for _, line := range []string{"", "  ", "true\x00"} {
		if r, err := c.Check(context.Background(), commands.Env{Workspace: ws}, line); err == nil {
			t.Errorf("line %q: got %+v, want a refusal", line, r)
		}
	}
	r, err := c.Check(context.Background(), commands.Env{Workspace: ws, Profile: commands.Profile{Bounded: true}}, "touch x")
	if err == nil || !strings.Contains(err.Error(), "sandbox") {
		t.Errorf("bounded check without a sandbox: got %+v, %v; want a refusal naming the sandbox", r, err)
	}
	if _, err := os.Stat(filepath.Join(ws, "x")); err == nil {
		t.Error("the refused check ran")
	}
}

// TestCheckNetworkOnlyWhereConfigGrantsIt: Profile.Network keeps the network the config
// grants, and grants none the config does not.
func TestCheckNetworkOnlyWhereConfigGrantsIt(t *testing.T) {
	bwrap := slirpHere(t)
	ws := workspace(t)
	env := commands.Env{Workspace: ws, Profile: commands.Profile{Bounded: true, Network: true}}
	for _, granted := range []bool{true, false} {
		c := mustShell(t, Options{Sandbox: SandboxBwrap, Bwrap: bwrap, Network: granted}).(Checker)
		r, err := c.Check(context.Background(), env, onlineLine)
		if err != nil {
			t.Fatal(err)
		}
		if online := strings.Contains(r.Output, "online"); online != granted {
			t.Errorf("config network %v: online %v (%+v)", granted, online, r)
		}
	}
}
