package agent

import (
	"context"
	"errors"
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

func TestPermissionPatterns(t *testing.T) {
	h := newHarness(t, func(o *Options) {
		o.Allow = []string{"list_folder(*)"}
		o.Deny = []string{"write_file(secret*)"}
	})
	h.fake.Script(
		reply("list_folder", map[string]string{"path": "."}),                           // allowed by config
		reply("write_file", map[string]string{"path": "secret.txt", "contents": "x"}),  // denied by config: feedback
		reply("write_file", map[string]string{"path": "notes.txt", "contents": "one"}), // asks; y! grants this exact command
		reply("list_folder", map[string]string{"path": "./."}),                         // allowed
		reply("write_file", map[string]string{"path": "notes.txt", "contents": "one"}), // allowed by the exact grant
		reply("write_file", map[string]string{"path": "notes.txt", "contents": "two"}), // other contents: asks, until a pattern is stored
		reply("write_file", map[string]string{"path": "other.txt", "contents": "x"}),   // asks
	)
	a := h.create(api.CreateAgentRequest{})
	p := h.pending(a.ID)
	if p.Command != "write_file" || !strings.Contains(string(p.Args), "notes.txt") {
		t.Fatalf("first proposal to ask about = %s %s, want write_file notes.txt", p.Command, p.Args)
	}
	d, err := h.decide(a.ID, p, "y!")
	if err != nil {
		t.Fatal(err)
	}
	if d.Scope != api.ScopeAgent || d.Pattern != "" || d.Grant == "" {
		t.Fatalf("decision = %+v, want scope agent with an exact grant and no pattern", d)
	}
	p = h.pending(a.ID)
	if !strings.Contains(string(p.Args), `"two"`) {
		t.Fatalf("next proposal to ask about = %s %s, want the write of notes.txt with other contents", p.Command, p.Args)
	}
	// Widening is a separate choice: a stored pattern approves the pending write.
	if _, err := h.sup.policyService.AddPermission(context.Background(), a.ID, api.PermissionRequest{Effect: "allow", Pattern: "write_file(notes.txt)", By: "tester"}); err != nil {
		t.Fatal(err)
	}
	two := p.ID
	p = h.waitFor(a.ID, "the next proposal", func(a *api.Agent) bool {
		return a.State == api.StateAwaitingDecision && a.Pending != nil && a.Pending.ID != two
	}).Pending
	if !strings.Contains(string(p.Args), "other.txt") {
		t.Fatalf("next proposal to ask about = %s %s, want write_file other.txt", p.Command, p.Args)
	}
	eps := h.history(a.ID)
	var outcomes []string
	for _, e := range eps {
		outcomes = append(outcomes, e.Command+":"+e.Outcome)
	}
	want := "list_folder:succeeded write_file:feedback write_file:succeeded list_folder:succeeded write_file:succeeded write_file:succeeded"
	if strings.Join(outcomes, " ") != want {
		t.Errorf("history = %s\nwant      %s", strings.Join(outcomes, " "), want)
	}
	if !strings.Contains(eps[1].Feedback, "write_file(secret*)") {
		t.Errorf("the refusal does not name the pattern: %q", eps[1].Feedback)
	}
	v, err := h.sup.policyService.Policy(context.Background(), a.ID)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, p := range v.Permissions {
		got = append(got, p.Source+":"+p.Effect+":"+p.Pattern)
	}
	if strings.Join(got, " ") != "stored:allow:write_file(notes.txt) config:deny:write_file(secret*) config:allow:list_folder(*)" {
		t.Errorf("policy = %v", got)
	}

	// agentctl commands shows, per command, the patterns that can decide it, deny first;
	// without an agent, only the config's.
	for _, tt := range []struct{ ref, want string }{
		{ref: a.ID, want: "list_folder[allow:list_folder(*)] read_file[] write_file[deny:write_file(secret*) allow:write_file(notes.txt)] ask_user[] finish[]"},
		{ref: "", want: "list_folder[allow:list_folder(*)] read_file[] write_file[deny:write_file(secret*)] ask_user[] finish[]"},
	} {
		infos, err := h.sup.policyService.Commands(context.Background(), tt.ref)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, c := range infos {
			if !strings.Contains(tt.want, c.Name+"[") {
				continue // the harness's test commands
			}
			var pats []string
			for _, p := range c.Patterns {
				pats = append(pats, p.Effect+":"+p.Pattern)
			}
			got = append(got, c.Name+"["+strings.Join(pats, " ")+"]")
		}
		if strings.Join(got, " ") != tt.want {
			t.Errorf("Commands(%q) = %s\nwant %s", tt.ref, strings.Join(got, " "), tt.want)
		}
	}
	if _, err := h.sup.policyService.Commands(context.Background(), "nobody"); err == nil {
		t.Error("Commands of an unknown agent succeeded")
	}

	// agentctl policy AGENT test: the same layers decide, on the cleaned path and on the
	// path a link in the workspace leads to.
	os.WriteFile(filepath.Join(a.Workspace, "secret.txt"), []byte("s"), 0o600)
	if err := os.Symlink("secret.txt", filepath.Join(a.Workspace, "notes-link")); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		req  api.PolicyTestRequest
		want string // effect pattern source
	}{
		{api.PolicyTestRequest{Command: "write_file", Subject: "./secret.txt"}, "deny write_file(secret*) config"},
		{api.PolicyTestRequest{Command: "write_file", Subject: "notes.txt"}, "allow write_file(notes.txt) stored"},
		{api.PolicyTestRequest{Command: "write_file", Subject: "notes-link"}, "deny write_file(secret*) config"},
		{api.PolicyTestRequest{Command: "list_folder", Args: []byte(`{"path":"./."}`)}, "allow list_folder(*) config"},
		{api.PolicyTestRequest{Command: "write_file", Subject: "../x"}, "ask  "},
		{api.PolicyTestRequest{Command: "execute_shell", Subject: "ls"}, "ask  "},
	} {
		v, err := h.sup.policyService.TestPolicy(context.Background(), a.Name, tt.req)
		if err != nil {
			t.Fatalf("TestPolicy(%+v): %v", tt.req, err)
		}
		if got := v.Effect + " " + v.Pattern + " " + v.Source; got != tt.want {
			t.Errorf("TestPolicy(%+v) = %q (%s), want %q", tt.req, got, v.Reason, tt.want)
		}
	}
	for _, bad := range []api.PolicyTestRequest{{}, {Command: "ask_user", Subject: "x"}, {Command: "write_file", Subject: "a", Args: []byte(`{}`)}} {
		if _, err := h.sup.policyService.TestPolicy(context.Background(), a.Name, bad); err == nil {
			t.Errorf("TestPolicy(%+v) succeeded", bad)
		}
	}
}

func TestExecuteCommandsAskEvenInContinuousMode(t *testing.T) {
	h := newHarness(t, func(o *Options) {
		o.Commands = append(append([]string{}, testCommands...), "test_execute")
	})
	h.fake.Script(reply("test_execute", map[string]string{"what": "x"}))
	a := h.create(api.CreateAgentRequest{Policy: &api.Policy{Mode: "continuous", ContinuousLimit: 50}})
	p := h.pending(a.ID)
	if p.Command != "test_execute" {
		t.Fatalf("pending = %+v", p)
	}
	if _, err := h.sup.policyService.AddPermission(context.Background(), a.ID, api.PermissionRequest{Effect: "allow", Pattern: "*(*)"}); err != nil {
		t.Fatal(err)
	}
	if got, _ := h.sup.agentViews.Agent(context.Background(), a.ID); got.Pending == nil {
		t.Fatal("a wildcard pattern approved an execute command")
	}
	for _, bad := range []api.PermissionRequest{{Effect: "allow", Pattern: "x("}, {Effect: "maybe", Pattern: "x"}} {
		if _, err := h.sup.policyService.AddPermission(context.Background(), a.ID, bad); err == nil {
			t.Errorf("AddPermission(%+v) succeeded", bad)
		}
	}
	if _, err := h.sup.policyService.AddPermission(context.Background(), a.ID, api.PermissionRequest{Effect: "allow", Pattern: "test_execute(x)"}); err != nil {
		t.Fatal(err)
	}
	h.waitFor(a.ID, "the literal pattern to run it", func(a *api.Agent) bool { return a.Pending == nil || a.Pending.ID != p.ID })
}

// agentctl policy AGENT test decides as authorization does: a grant that would approve
// the proposal says allow and names itself, where the patterns alone would ask.
func TestPolicyTestWeighsGrants(t *testing.T) {
	h := newHarness(t)
	h.fake.Script(reply("list_folder", map[string]string{"path": "."}))
	a := h.create(api.CreateAgentRequest{})
	h.pending(a.ID)
	ctx := context.Background()
	req := api.PolicyTestRequest{Command: "write_file", Args: []byte(`{"path":"notes/a.txt","contents":"x"}`)}
	if v, err := h.sup.policyService.TestPolicy(ctx, a.Name, req); err != nil || v.Effect != "ask" {
		t.Fatalf("before the grant: %+v, %v; want ask", v, err)
	}
	pv, err := h.sup.policyService.AddGrant(ctx, a.Name, api.GrantRequest{Pattern: "write_file(notes/*)", By: "root"})
	if err != nil {
		t.Fatal(err)
	}
	v, err := h.sup.policyService.TestPolicy(ctx, a.Name, req)
	if err != nil {
		t.Fatal(err)
	}
	if v.Effect != "allow" || !strings.Contains(v.Reason, "write_file(notes/*)") || v.Decision == nil || v.Decision.Grant != pv.Grant.ID {
		t.Errorf("with grant %s: %+v; want allow, naming the grant", pv.Grant.ID, v)
	}
}

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

func TestWhyNamesTheRuleOrPerson(t *testing.T) {
	h := newHarness(t, func(o *Options) { o.Allow = []string{"list_folder(*)"} })
	h.fake.Script(
		reply("list_folder", map[string]string{"path": "."}),                         // allowed by config
		reply("write_file", map[string]string{"path": "notes.txt", "contents": "x"}), // asks
	)
	a := h.create(api.CreateAgentRequest{})
	p := h.pending(a.ID)
	ctx := context.Background()
	w, err := h.sup.policyService.Why(ctx, a.Name)
	if err != nil {
		t.Fatal(err)
	}
	if w.Proposal.Command != "list_folder" || w.Decision.Source != "policy" || w.Decision.Pattern != "list_folder(*)" || w.Layer != "config" {
		t.Errorf("why before the person decided = %+v, want list_folder approved by list_folder(*) from config", w)
	}
	if want := "auto-approved by the allow pattern list_folder(*) (config)"; w.Reason != want {
		t.Errorf("reason = %q, want %q", w.Reason, want)
	}
	if _, err := h.decide(a.ID, p, "n"); err != nil {
		t.Fatal(err)
	}
	w, err = h.sup.policyService.Why(ctx, a.ID)
	if err != nil {
		t.Fatal(err)
	}
	if w.Proposal.ID != p.ID || w.Decision.Kind != api.DecisionDeny || w.Layer != "" {
		t.Errorf("why after the denial = %+v, want the denial of %s", w, p.ID)
	}
	if want := "denied by " + w.Decision.By + " via " + w.Decision.Source + "; the run stopped"; w.Reason != want {
		t.Errorf("reason = %q, want %q", w.Reason, want)
	}
	if _, err := h.sup.policyService.Why(ctx, "nobody"); !errors.Is(err, api.ErrNotFound) {
		t.Errorf("Why(unknown agent) = %v, want ErrNotFound", err)
	}
}

func TestWhyBeforeAnyDecision(t *testing.T) {
	h := newHarness(t)
	h.fake.Script(reply("write_file", map[string]string{"path": "a.txt", "contents": "x"}))
	a := h.create(api.CreateAgentRequest{})
	h.pending(a.ID)
	if _, err := h.sup.policyService.Why(context.Background(), a.ID); !errors.Is(err, api.ErrNotFound) {
		t.Errorf("Why with only a pending proposal = %v, want ErrNotFound", err)
	}
}

func TestWhyReason(t *testing.T) {
	cases := []struct {
		name  string
		d     api.Decision
		layer string
		want  string
	}{
		{"policy_pattern", api.Decision{Kind: api.DecisionApprove, Source: "policy", By: "allow pattern read_file(*)", Pattern: "read_file(*)"}, "stored",
			"auto-approved by the allow pattern read_file(*) (stored)"},
		{"policy_auto_read", api.Decision{Kind: api.DecisionApprove, Source: "policy", By: "auto_read"}, "",
			"auto-approved: a read command, and the agent's policy runs reads unasked (auto_read)"},
		{"policy_mode", api.Decision{Kind: api.DecisionApprove, Source: "policy", By: "auto (alice's)"}, "",
			"approved by the policy mode auto (alice's)"},
		{"policy_deny", api.Decision{Kind: api.DecisionFeedback, Source: "policy", By: "deny pattern rm(*)", Pattern: "rm(*)"}, "config",
			"refused by the deny pattern rm(*) (config): the model was told to choose another way"},
		{"person_approve", api.Decision{Kind: api.DecisionApprove, Count: 1, Source: "slack", By: "alice"}, "",
			"approved by alice via slack"},
		{"person_approve_n", api.Decision{Kind: api.DecisionApprove, Count: 3, Source: "agentctl", By: "bob"}, "",
			"approved by bob via agentctl for this and the next 2 proposals (y -3)"},
		{"person_always", api.Decision{Kind: api.DecisionApprove, Count: 1, Scope: api.ScopeAgent, Pattern: "ls(*)", Source: "discord", By: "carol"}, "",
			"approved by carol via discord, who also allowed ls(*) for the agent from then on"},
		{"grant_count", api.Decision{Kind: api.DecisionApprove, Count: 1, Source: "grant", By: "root", Grant: "g-1", GrantLabel: "root's y -3 (1 left)"}, "",
			"approved by root's y -3 (1 left) (grant g-1), without asking"},
		{"person_approve_n_grant", api.Decision{Kind: api.DecisionApprove, Count: 3, Source: "agentctl", By: "bob", Grant: "g-2"}, "",
			"approved by bob via agentctl for this and the next 2 proposals (y -3, grant g-2)"},
		{"person_always_exact", api.Decision{Kind: api.DecisionApprove, Count: 1, Scope: api.ScopeAgent, Source: "discord", By: "carol", Grant: "g-3"}, "",
			"approved by carol via discord, who also granted this exact command with these args from then on (grant g-3)"},
		{"person_never", api.Decision{Kind: api.DecisionDeny, Scope: api.ScopeDeny, Pattern: "rm(*)", Source: "agentctl", By: "bob"}, "",
			"denied by bob via agentctl, who also denied rm(*) for the agent from then on"},
		{"person_feedback", api.Decision{Kind: api.DecisionFeedback, Feedback: "use git", Source: "api"}, "",
			"not run: api answered with feedback, which went to the model"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := whyReason(&api.Why{Decision: c.d, Layer: c.layer}); got != c.want {
				t.Errorf("whyReason = %q, want %q", got, c.want)
			}
		})
	}
}

// A deny rule on writes added while checkpoints are off comes back with a warning that
// it has no second wall (agentctl policy prints it); with checkpoints on, or with allow
// rules only, there is none.
func TestWriteDenyRuleWarnsWhileCheckpointsAreOff(t *testing.T) {
	for _, tc := range []struct {
		name   string
		opts   []func(*Options)
		effect string
		warns  bool
	}{
		{"deny_with_checkpoints_off", nil, "deny", true},
		{"deny_with_checkpoints_on", []func(*Options){withCheckpoints}, "deny", false},
		{"allow_with_checkpoints_off", nil, "allow", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, tc.opts...)
			a := h.create(api.CreateAgentRequest{})
			v, err := h.sup.policyService.AddPermission(context.Background(), a.Name, api.PermissionRequest{Effect: tc.effect, Pattern: "write_file(*.toml)"})
			if err != nil {
				t.Fatal(err)
			}
			got := len(v.Warnings) == 1 && strings.Contains(v.Warnings[0], "no second wall") && strings.Contains(v.Warnings[0], "set [checkpoints] enabled = true")
			if got != tc.warns || !tc.warns && len(v.Warnings) > 0 {
				t.Errorf("warnings after %s write_file(*.toml): %q, want a warning of no second wall: %v", tc.effect, v.Warnings, tc.warns)
			}
		})
	}
}
