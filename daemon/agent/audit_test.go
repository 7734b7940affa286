package agent

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentd/agentd/api"
	"github.com/agentd/agentd/daemon/store"
)

func TestAuditAndReplay(t *testing.T) {
	h := newHarness(t)
	h.fake.Script(
		reply("write_file", map[string]string{"path": "a.txt", "contents": "one"}),
		reply("write_file", map[string]string{"path": "b.txt", "contents": "two"}),
		reply("write_file", map[string]string{"path": "c.txt", "contents": "two"}),
	)
	a := h.create(api.CreateAgentRequest{})
	p := h.pending(a.ID)
	if _, err := h.decide(a.ID, p, "y"); err != nil {
		t.Fatal(err)
	}
	p2 := h.pending(a.ID)
	if _, err := h.decide(a.ID, p2, "not b, c"); err != nil {
		t.Fatal(err)
	}
	h.pending(a.ID) // the step after the feedback
	ctx := context.Background()

	list, err := h.sup.auditLog.Audit(ctx, api.AuditQuery{Agent: a.Name})
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for _, e := range list {
		kinds = append(kinds, e.Kind)
		if e.AgentID != a.ID || e.Agent != a.Name {
			t.Errorf("entry %+v is not the agent's", e)
		}
	}
	got := strings.Join(kinds, " ")
	for _, want := range []string{"created", "proposal", "decision", "started", "succeeded"} {
		if !strings.Contains(got, want) {
			t.Errorf("audit kinds %q lack %q", got, want)
		}
	}
	// A kind filter is applied before the limit: the one decision is found behind newer entries.
	if ds, err := h.sup.auditLog.Audit(ctx, api.AuditQuery{Kind: "decision", Limit: 1}); err != nil || len(ds) != 1 || ds[0].Kind != "decision" {
		t.Errorf("kind decision, limit 1 = %+v, %v; want the newest decision", ds, err)
	}
	if last, err := h.sup.auditLog.Audit(ctx, api.AuditQuery{Limit: 2}); err != nil || len(last) != 2 || last[1].ID != list[len(list)-1].ID {
		t.Errorf("limit 2 = %+v, %v; want the newest two, oldest first", last, err)
	}
	// The page before: the two entries older than that listing's oldest, oldest first.
	if last, err := h.sup.auditLog.Audit(ctx, api.AuditQuery{Limit: 2}); err == nil && len(last) == 2 {
		prev, err := h.sup.auditLog.Audit(ctx, api.AuditQuery{Limit: 2, Before: last[0].ID})
		if err != nil || len(prev) != 2 || prev[1].ID >= last[0].ID || prev[0].ID >= prev[1].ID {
			t.Errorf("limit 2 before %d = %+v, %v; want the two entries before it, oldest first", last[0].ID, prev, err)
		}
	}
	if _, err := h.sup.auditLog.Audit(ctx, api.AuditQuery{Limit: 10_001}); !errors.Is(err, api.ErrBadRequest) || !strings.Contains(err.Error(), "before") {
		t.Errorf("limit 10001: %v, want a bad request that names paging with before", err)
	}
	if none, err := h.sup.auditLog.Audit(ctx, api.AuditQuery{Since: time.Now().Add(time.Hour)}); err != nil || len(none) != 0 {
		t.Errorf("since an hour ahead = %d entries, %v", len(none), err)
	}
	if _, err := h.sup.auditLog.Audit(ctx, api.AuditQuery{Limit: -1}); !errors.Is(err, api.ErrBadRequest) {
		t.Errorf("limit -1: %v, want a bad request", err)
	}

	r, err := h.sup.auditLog.Replay(ctx, a.Name)
	if err != nil {
		t.Fatal(err)
	}
	if r.Run.ID == "" || r.Run.AgentID != a.ID || len(r.Steps) < 2 {
		t.Fatalf("replay = %+v", r)
	}
	s1, s2 := r.Steps[0], r.Steps[1]
	if s1.Proposal.ID != p.ID || len(s1.Decisions) != 1 || s1.Decisions[0].Kind != api.DecisionApprove || s1.Episode == nil || s1.Episode.Outcome != "succeeded" {
		t.Errorf("step 1 = %+v", s1)
	}
	if s2.Proposal.ID != p2.ID || len(s2.Decisions) != 1 || s2.Decisions[0].Feedback != "not b, c" || s2.Episode == nil || s2.Episode.Outcome != "feedback" {
		t.Errorf("step 2 = %+v", s2)
	}
	byID, err := h.sup.auditLog.Replay(ctx, r.Run.ID)
	if err != nil || len(byID.Steps) != len(r.Steps) {
		t.Errorf("replay by run id = %+v, %v", byID, err)
	}
	if _, err := h.sup.auditLog.Replay(ctx, "nope"); !errors.Is(err, api.ErrNotFound) {
		t.Errorf("replay of nothing: %v, want not found", err)
	}
}

// TestUnknownAgentIsAnErrorEverywhere: the audit log refuses an agent it never had, as
// every other call does, and a near miss names the agent meant; a removed agent's entries
// are still found under its id.
func TestUnknownAgentIsAnErrorEverywhere(t *testing.T) {
	ctx := context.Background()
	h := newHarness(t)
	a := h.create(api.CreateAgentRequest{Name: "walker", Description: "d", Goals: []string{"g"}, Start: new(bool)})
	audit, views, runs := h.sup.auditLog, h.sup.agentViews, h.sup.runs
	if _, err := audit.Audit(ctx, api.AuditQuery{Agent: "nosuch"}); !errors.Is(err, api.ErrNotFound) {
		t.Errorf("audit of an agent never known: %v, want not found", err)
	}
	for _, call := range []func() error{
		func() error { _, err := audit.Audit(ctx, api.AuditQuery{Agent: "walkr"}); return err },
		func() error { _, err := views.Agent(ctx, "walkr"); return err },
	} {
		if err := call(); !errors.Is(err, api.ErrNotFound) || !strings.Contains(err.Error(), `did you mean "walker"?`) {
			t.Errorf("a typo of walker: %v, want not found naming walker", err)
		}
	}
	if err := runs.DeleteAgent(ctx, a.ID); err != nil {
		t.Fatal(err)
	}
	if got, err := audit.Audit(ctx, api.AuditQuery{Agent: a.ID}); err != nil || len(got) == 0 {
		t.Errorf("audit of a removed agent by id: %d entries, %v; want its entries", len(got), err)
	}
}

// failAudit makes every later audit write in the store at path fail.
func failAudit(t *testing.T, path string) {
	t.Helper()
	db, err := sql.Open("sqlite", path+"?_pragma=busy_timeout(10000)")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(`CREATE TRIGGER audit_fails BEFORE INSERT ON audit BEGIN SELECT RAISE(ABORT, 'audit disk full'); END`); err != nil {
		t.Fatal(err)
	}
}

func TestAuditFailureFailsTheChange(t *testing.T) {
	h := newHarness(t)
	a := h.create(api.CreateAgentRequest{Name: "audited", Task: "wait"})
	failAudit(t, filepath.Join(h.dir, "agentd.db"))
	ctx := context.Background()
	_, err := h.sup.policyService.AddPermission(ctx, a.Name, api.PermissionRequest{Effect: "allow", Pattern: "read_file(*)", By: "tester"})
	if err == nil || !strings.Contains(err.Error(), "audit") {
		t.Fatalf("AddPermission with a failing audit log = %v, want the audit error", err)
	}
	v, err := h.sup.policyService.Policy(ctx, a.Name)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range v.Permissions {
		if r.Pattern == "read_file(*)" {
			t.Errorf("permission %+v was stored though its audit line was not", r)
		}
	}
}

func TestAuditKeeperLogsAndCounts(t *testing.T) {
	h := newHarness(t)
	a := h.create(api.CreateAgentRequest{Name: "audited", Task: "wait"})
	failAudit(t, filepath.Join(h.dir, "agentd.db"))
	st := h.st
	var logged bytes.Buffer
	k := &auditKeeper{log: slog.New(slog.NewTextHandler(&logged, nil))}
	err := st.Tx(context.Background(), func(tx *store.Tx) error {
		k.keep(tx, a.ID, "finished", map[string]string{"proposal": "p1"})
		return tx.SetStateValue(a.ID, "kept", []byte("yes"))
	})
	if err != nil {
		t.Fatalf("the transaction failed with its audit line: %v", err)
	}
	if k.failures() != 1 {
		t.Errorf("failures() = %d, want 1", k.failures())
	}
	if !strings.Contains(logged.String(), "audit_failures=1") || !strings.Contains(logged.String(), "kind=finished") {
		t.Errorf("log = %q, want the failed line's kind and the count", logged.String())
	}
	var got []byte
	if err := st.View(context.Background(), func(tx *store.Tx) (err error) { got, err = tx.StateValue(a.ID, "kept"); return }); err != nil {
		t.Fatal(err)
	}
	if string(got) != "yes" {
		t.Errorf("state value = %q, want the change kept", got)
	}
}

// failures is how many audit lines could not be written since the daemon started.
func (k *auditKeeper) failures() int64 { return k.dropped.Load() }
