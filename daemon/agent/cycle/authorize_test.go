package cycle

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/agentd/agentd/api"
	"github.com/agentd/agentd/commands"
	"github.com/agentd/agentd/commands/permission"
)

func TestAuthorize(t *testing.T) {
	read := &commands.Spec{Name: "read_file", Class: commands.ClassRead, Subject: "path"}
	write := &commands.Spec{Name: "write_file", Class: commands.ClassWriteWorkspace, Subject: "path"}
	shell := &commands.Spec{Name: "execute_shell", Class: commands.ClassExecute, Subject: "command_line"}
	rules, err := permission.ParseRules("config", []string{"read_file(docs/*)"}, []string{"read_file(secrets/*)"})
	if err != nil {
		t.Fatal(err)
	}
	prop := func(cmd string, args map[string]string) *api.Proposal {
		b, _ := json.Marshal(args)
		return &api.Proposal{ID: "p-1", Command: cmd, Args: b, Step: 3}
	}
	t0 := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	count := func(left int) []api.Grant {
		return []api.Grant{{ID: "g-1", Kind: api.GrantCount, By: "root", Source: "agentctl", Label: "y -3", Count: 2, Used: 2 - left, RunID: "r-1"}}
	}
	for _, c := range []struct {
		name     string
		req      Request
		want     Verdict
		by       string // the decision's By
		grant    string // the grant's Describe after this approval, when a grant approves
		newGrant *api.Grant
	}{
		{"ask_user_needs_no_approval", Request{Proposal: prop(commands.AskUser, map[string]string{"question": "?"})}, Allow, "ask_user needs no approval", "", nil},
		{"repeat_asks", Request{Proposal: prop("read_file", map[string]string{"path": "docs/a"}), Spec: read, Rules: []permission.Rules{rules}, Repeat: true}, Ask, "", "", nil},
		{"unknown_command_asks", Request{Proposal: prop("nope", nil), Grants: count(2), Run: "r-1"}, Ask, "", "", nil},
		{"deny_pattern_refuses", Request{Proposal: prop("read_file", map[string]string{"path": "secrets/k"}), Spec: read, Rules: []permission.Rules{rules}, Grants: count(2), Run: "r-1"}, Refuse, "deny pattern read_file(secrets/*)", "", nil},
		{"allow_pattern_approves", Request{Proposal: prop("read_file", map[string]string{"path": "docs/a"}), Spec: read, Rules: []permission.Rules{rules}}, Allow, "allow pattern read_file(docs/*)", "", nil},
		{"auto_read_approves_reads", Request{Proposal: prop("read_file", map[string]string{"path": "x"}), Spec: read, Options: permission.Options{AutoRead: true}}, Allow, "auto_read", "", nil},
		{"execute_asks_under_count_grant", Request{Proposal: prop("execute_shell", map[string]string{"command_line": "ls"}), Spec: shell, Grants: count(2), Run: "r-1"}, Ask, "", "", nil},
		{"count_grant_draws_one", Request{Proposal: prop("write_file", map[string]string{"path": "a"}), Spec: write, Grants: count(2), Run: "r-1"}, Allow, "root", "root's y -3 (1 of 2 left)", nil},
		{"last_of_count_grant_approves", Request{Proposal: prop("write_file", map[string]string{"path": "a"}), Spec: write, Grants: count(1), Run: "r-1", Policy: Policy{Owner: "lead"}}, Allow, "root", "root's y -3 (0 of 2 left)", nil},
		{"used_up_grant_asks", Request{Proposal: prop("write_file", map[string]string{"path": "a"}), Spec: write, Grants: count(0), Run: "r-1"}, Ask, "", "", nil},
		{"count_grant_of_another_run_asks", Request{Proposal: prop("write_file", map[string]string{"path": "a"}), Spec: write, Grants: count(2), Run: "r-2"}, Ask, "", "", nil},
		{"continuous_within_limit", Request{Proposal: prop("write_file", map[string]string{"path": "a"}), Spec: write, Policy: Policy{Mode: "continuous", ContinuousLimit: 3}}, Allow, "continuous", "", nil},
		{"continuous_past_limit_asks", Request{Proposal: prop("write_file", map[string]string{"path": "a"}), Spec: write, Policy: Policy{Mode: "continuous", ContinuousLimit: 2}}, Ask, "", "", nil},
		{"ask_mode_asks", Request{Proposal: prop("write_file", map[string]string{"path": "a"}), Spec: write, Policy: Policy{Mode: "ask"}, Now: t0}, Ask, "", "", nil},
		{"person_approve_n_grants", Request{Proposal: prop("write_file", nil), Approver: true, Policy: Policy{Mode: "ask"}, Run: "r-1",
			Decision: &api.Decision{Kind: api.DecisionApprove, Count: 4, By: "ana", Source: "slack"}}, Allow, "ana", "",
			&api.Grant{Kind: api.GrantCount, By: "ana", Source: "slack", Label: "y -4", Count: 3, RunID: "r-1"}},
		{"person_approve_n_keeps_continuous", Request{Proposal: prop("write_file", nil), Approver: true, Policy: Policy{Mode: "continuous"},
			Decision: &api.Decision{Kind: api.DecisionApprove, Count: 4, Source: "api"}}, Allow, "", "", nil},
		{"person_approve_always_grants_exact", Request{Proposal: &api.Proposal{ID: "p-1", Command: "write_file", Hash: "h1"}, Approver: true, Run: "r-1",
			Decision: &api.Decision{Kind: api.DecisionApprove, Count: 1, By: "root", Source: "agentctl", Scope: api.ScopeAgent}}, Allow, "root", "",
			&api.Grant{Kind: api.GrantExact, By: "root", Source: "agentctl", Label: "y!", Command: "write_file", Hash: "h1"}},
		{"person_deny_refuses", Request{Proposal: prop("write_file", nil), Approver: true,
			Decision: &api.Decision{Kind: api.DecisionDeny, Source: "discord"}}, Refuse, "", "", nil},
		{"non_approver_is_refused", Request{Proposal: prop("write_file", nil),
			Decision: &api.Decision{Kind: api.DecisionApprove, Count: 1, Source: "slack"}}, Refuse, "", "", nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := Authorize(c.req)
			if got.Verdict != c.want {
				t.Fatalf("verdict %s (%s), want %s", got.Verdict, got.Reason, c.want)
			}
			if got.Reason == "" {
				t.Error("no reason given")
			}
			if c.by != "" && (got.Decision == nil || got.Decision.By != c.by) {
				t.Errorf("decision %+v, want one by %q", got.Decision, c.by)
			}
			if c.want == Ask && got.Decision != nil {
				t.Errorf("asking made a decision: %+v", got.Decision)
			}
			switch {
			case c.grant == "" && got.Grant != nil:
				t.Errorf("approved by grant %+v, want no grant", got.Grant)
			case c.grant != "" && (got.Grant == nil || got.Grant.Describe() != c.grant || got.Decision.Grant != got.Grant.ID || got.Decision.Source != SourceGrant):
				t.Errorf("grant %+v, decision %+v; want the grant described %q named in the decision", got.Grant, got.Decision, c.grant)
			}
			// The decision names the grant, and carries its count as fields.
			if c.grant != "" && (!strings.HasPrefix(got.Decision.GrantLabel, got.Grant.Name()) ||
				got.Decision.GrantCount != got.Grant.Count || got.Decision.GrantLeft != got.Grant.Left()) {
				t.Errorf("decision's grant %q, %d of %d left; want %q, %d of %d", got.Decision.GrantLabel, got.Decision.GrantLeft, got.Decision.GrantCount,
					got.Grant.Name(), got.Grant.Left(), got.Grant.Count)
			}
			if (c.newGrant == nil) != (got.NewGrant == nil) || (c.newGrant != nil && !reflect.DeepEqual(*c.newGrant, *got.NewGrant)) {
				t.Errorf("new grant %+v, want %+v", got.NewGrant, c.newGrant)
			}
		})
	}
}

// TestGrantMatching: what each kind of grant approves, and that a grant that ended
// (expired, revoked, used up, its run over) approves nothing.
func TestGrantMatching(t *testing.T) {
	write := &commands.Spec{Name: "write_file", Class: commands.ClassWriteWorkspace, Subject: "path"}
	shell := &commands.Spec{Name: "execute_shell", Class: commands.ClassExecute, Subject: "command_line"}
	t0 := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	before, after := t0.Add(-time.Minute), t0.Add(time.Minute)
	prop := func(cmd, hash string, args map[string]string) *api.Proposal {
		b, _ := json.Marshal(args)
		return &api.Proposal{ID: "p-9", Command: cmd, Args: b, Hash: hash, Step: 2}
	}
	exact := api.Grant{ID: "g-x", Kind: api.GrantExact, By: "root", Label: "y!", Command: "write_file", Hash: "h-notes-a"}
	pattern := api.Grant{ID: "g-p", Kind: api.GrantPattern, By: "root", Pattern: "write_file(notes/*)", CreatedAt: t0}
	shellPat := api.Grant{ID: "g-s", Kind: api.GrantPattern, By: "root", Pattern: "execute_shell(git status*)", CreatedAt: t0}
	count := api.Grant{ID: "g-c", Kind: api.GrantCount, By: "root", Label: "y -3", Count: 2, RunID: "r-1"}
	with := func(g api.Grant, f func(*api.Grant)) api.Grant { f(&g); return g }
	notesA := prop("write_file", "h-notes-a", map[string]string{"path": "notes/a", "content": "one"})
	for _, c := range []struct {
		name  string
		grant api.Grant
		p     *api.Proposal
		spec  *commands.Spec
		want  bool
	}{
		{"exact_approves_same_command_and_args", exact, notesA, write, true},
		{"exact_refuses_other_contents", exact, prop("write_file", "h-notes-a-2", map[string]string{"path": "notes/a", "content": "two"}), write, false},
		{"exact_refuses_other_command_same_hash", exact, prop("append_file", "h-notes-a", nil), write, false},
		{"exact_with_no_hash_approves_nothing", with(exact, func(g *api.Grant) { g.Hash = "" }), prop("write_file", "", nil), write, false},
		{"pattern_approves_match", pattern, prop("write_file", "h2", map[string]string{"path": "notes/b", "content": "x"}), write, true},
		{"pattern_refuses_outside", pattern, prop("write_file", "h3", map[string]string{"path": "src/b", "content": "x"}), write, false},
		{"pattern_refuses_traversal", pattern, prop("write_file", "h4", map[string]string{"path": "notes/../src/b"}), write, false},
		{"shell_pattern_approves_plain_line", shellPat, prop("execute_shell", "h5", map[string]string{"command_line": "git status -s"}), shell, true},
		{"shell_pattern_refuses_chained_line", shellPat, prop("execute_shell", "h6", map[string]string{"command_line": "git status; rm -rf ~"}), shell, false},
		{"count_approves_writes", count, notesA, write, true},
		{"count_never_approves_execute", count, prop("execute_shell", "h7", map[string]string{"command_line": "ls"}), shell, false},
		{"command_not_offered_is_never_covered", count, notesA, nil, false},
		{"expired_approves_nothing", with(pattern, func(g *api.Grant) { g.ExpiresAt = &before }), prop("write_file", "h2", map[string]string{"path": "notes/b"}), write, false},
		{"not_yet_expired_approves", with(pattern, func(g *api.Grant) { g.ExpiresAt = &after }), prop("write_file", "h2", map[string]string{"path": "notes/b"}), write, true},
		{"revoked_approves_nothing", with(exact, func(g *api.Grant) { g.RevokedAt = &before }), notesA, write, false},
		{"used_up_approves_nothing", with(count, func(g *api.Grant) { g.Used = 2 }), notesA, write, false},
		{"run_over_approves_nothing", with(count, func(g *api.Grant) { g.RunID = "r-0" }), notesA, write, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := Authorize(Request{Proposal: c.p, Spec: c.spec, Grants: []api.Grant{c.grant}, Now: t0, Run: "r-1", Policy: Policy{Mode: "ask"}})
			if approved := got.Verdict == Allow; approved != c.want {
				t.Fatalf("approved %v (%s), want %v", approved, got.Reason, c.want)
			}
			if c.want && (got.Decision.Grant != c.grant.ID || got.Grant.Used != c.grant.Used+1) {
				t.Errorf("decision %+v, grant %+v: want grant %s named and its use counted", got.Decision, got.Grant, c.grant.ID)
			}
		})
	}
}

// An exact grant of an execute command approves only while the files its line names are
// the files it bound, with the same contents; a y! binds them, or is refused when they
// cannot be bound.
func TestExactGrantHoldsWhileItsFilesDo(t *testing.T) {
	shell := &commands.Spec{Name: "execute_shell", Class: commands.ClassExecute, Subject: "command_line"}
	t0 := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	p := &api.Proposal{ID: "p-2", Command: "execute_shell", Args: json.RawMessage(`{"command_line":"sh build.sh lib.sh"}`), Hash: "h-sh", Step: 2}
	build, lib := api.BoundFile{Path: "build.sh", SHA256: "b1"}, api.BoundFile{Path: "lib.sh", SHA256: "l1"}
	grant := api.Grant{ID: "g-x", Kind: api.GrantExact, By: "root", Label: "y!", Command: "execute_shell", Hash: "h-sh", Files: []api.BoundFile{build, lib}}
	legacy := grant
	legacy.Files = nil
	files := func(fs ...api.BoundFile) *Binding { return &Binding{Files: fs} }
	for _, c := range []struct {
		name    string
		grant   api.Grant
		bind    *Binding
		unbound string // "" when the grant approves
	}{
		{"same_files_same_contents_approve", grant, files(build, lib), ""},
		{"changed_file_asks", grant, files(api.BoundFile{Path: "build.sh", SHA256: "b2"}, lib), "build.sh changed since y! granted it (g-x)"},
		{"deleted_file_asks", grant, files(build), "lib.sh is no longer a workspace file since y! granted it (g-x)"},
		{"new_file_asks", grant, files(build, lib, api.BoundFile{Path: "sh", SHA256: "s1"}), "sh is a workspace file y! (g-x) did not bind when it was granted"},
		{"unbindable_line_asks", grant, &Binding{Problem: "it names more than 16 workspace files"}, "y! (g-x) cannot check the files the line names: it names more than 16 workspace files"},
		{"grant_binding_nothing_asks_when_the_line_names_a_file", legacy, files(build), "build.sh is a workspace file y! (g-x) did not bind when it was granted"},
		{"grant_binding_nothing_approves_a_line_naming_none", legacy, files(), ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := Authorize(Request{Proposal: p, Spec: shell, Grants: []api.Grant{c.grant}, Bind: c.bind, Now: t0, Policy: Policy{Mode: "ask"}})
			if c.unbound == "" {
				if got.Verdict != Allow || got.Grant == nil || got.Unbound != "" {
					t.Fatalf("%s (%s), unbound %q: want the grant to approve", got.Verdict, got.Reason, got.Unbound)
				}
				return
			}
			if got.Verdict != Ask || got.Decision != nil || got.Unbound != c.unbound || got.Reason != c.unbound+": a person decides" {
				t.Fatalf("%s, reason %q, unbound %q: want ask because %q", got.Verdict, got.Reason, got.Unbound, c.unbound)
			}
		})
	}

	yBang := &api.Decision{Kind: api.DecisionApprove, Count: 1, By: "root", Source: "agentctl", Scope: api.ScopeAgent}
	got := Authorize(Request{Proposal: p, Approver: true, Decision: yBang, Bind: files(build, lib)})
	if got.Verdict != Allow || got.NewGrant == nil || !reflect.DeepEqual(got.NewGrant.Files, []api.BoundFile{build, lib}) {
		t.Fatalf("y!: %s, new grant %+v; want one binding build.sh and lib.sh", got.Verdict, got.NewGrant)
	}
	got = Authorize(Request{Proposal: p, Approver: true, Decision: yBang, Bind: &Binding{Problem: "the files the line names hold more than 16 MiB"}})
	if got.Verdict != Refuse || got.Decision != nil || got.NewGrant != nil ||
		got.Reason != "y! cannot bind the files this line names (the files the line names hold more than 16 MiB): approve it once with y" {
		t.Fatalf("y! past the bound: %s %q, decision %+v; want it refused, saying how to approve once", got.Verdict, got.Reason, got.Decision)
	}
	once := &api.Decision{Kind: api.DecisionApprove, Count: 1, By: "root", Source: "agentctl"}
	if got := Authorize(Request{Proposal: p, Approver: true, Decision: once, Bind: &Binding{Problem: "too big"}}); got.Verdict != Allow || got.NewGrant != nil {
		t.Fatalf("y past the bound: %s %+v; want it run once", got.Verdict, got.NewGrant)
	}
}
