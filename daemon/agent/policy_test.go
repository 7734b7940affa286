package agent

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentd/agentd/api"
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
