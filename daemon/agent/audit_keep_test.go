package agent

import (
	"bytes"
	"context"
	"database/sql"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentd/agentd/api"
	"github.com/agentd/agentd/daemon/store"
)

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
