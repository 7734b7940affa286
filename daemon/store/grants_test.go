package store

import (
	"context"
	"database/sql"
	"errors"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentd/agentd/api"
)

func TestGrantsSurviveRestart(t *testing.T) {
	s, path := open(t)
	a := seed(t, s)
	exp := time.Now().Add(24 * time.Hour).Truncate(time.Millisecond).UTC()
	past := time.Now().Add(-time.Minute)
	mustTx(t, s, func(tx *Tx) error {
		for _, g := range []*api.Grant{
			{ID: "g-count", AgentID: a.ID, Kind: api.GrantCount, By: "root", Source: "agentctl", Label: "y -3", Count: 2, RunID: "r-1"},
			{ID: "g-exact", AgentID: a.ID, Kind: api.GrantExact, By: "ana", Source: "slack", Label: "y!", Command: "write_file", Hash: "abc"},
			{ID: "g-pat", AgentID: a.ID, Kind: api.GrantPattern, By: "root", Source: "agentctl", Label: "policy add", Pattern: "write_file(notes/*)", ExpiresAt: &exp},
			{ID: "g-old", AgentID: a.ID, Kind: api.GrantPattern, By: "root", Source: "agentctl", Label: "policy add", Pattern: "read_file(*)", ExpiresAt: &past},
			{ID: "g-run0", AgentID: a.ID, Kind: api.GrantCount, By: "root", Source: "agentctl", Label: "y -5", Count: 4, RunID: "r-0"},
		} {
			if err := tx.InsertGrant(g); err != nil {
				return err
			}
		}
		if err := tx.UseGrant("g-count"); err != nil {
			return err
		}
		if ok, err := tx.RevokeGrant("g-exact", "root"); err != nil || !ok {
			t.Errorf("revoke: %v %v", ok, err)
		}
		if ok, _ := tx.RevokeGrant("g-exact", "root"); ok {
			t.Error("revoked twice")
		}
		return tx.InsertDecision(&api.Decision{ProposalID: "p-1", Kind: api.DecisionApprove, Count: 1, Source: "grant",
			By: "root", Grant: "g-count", GrantLabel: "root's y -3 (1 left)"})
	})
	s2 := reopen(t, s, path)
	mustView(t, s2, func(tx *Tx) error {
		all, err := tx.Grants(a.ID)
		if err != nil {
			return err
		}
		if len(all) != 5 {
			t.Fatalf("grants after restart: %+v", all)
		}
		live, err := tx.LiveGrants(a.ID, "r-1")
		if err != nil {
			return err
		}
		if len(live) != 2 || live[0].ID == "g-exact" || live[1].ID == "g-exact" {
			t.Errorf("live grants: %+v, want the count and the pattern grant: not the revoked, expired or other run's", live)
		}
		g, err := tx.Grant(a.ID, "g-count")
		if err != nil {
			return err
		}
		if g.Used != 1 || g.Left() != 1 || g.Label != "y -3" || g.RunID != "r-1" {
			t.Errorf("count grant: %+v", g)
		}
		if g, _ := tx.Grant(a.ID, "g-pat"); g.ExpiresAt == nil || !g.ExpiresAt.Equal(exp) {
			t.Errorf("pattern grant's expiry: %+v", g)
		}
		if g, _ := tx.Grant(a.ID, "g-exact"); g.RevokedAt == nil || g.RevokedBy != "root" {
			t.Errorf("revoked grant: %+v", g)
		}
		if _, err := tx.Grant(a.ID, "g-none"); !errors.Is(err, ErrNotFound) {
			t.Errorf("unknown grant: %v", err)
		}
		d, err := tx.LastDecision("p-1")
		if err != nil {
			return err
		}
		if d.Grant != "g-count" || d.GrantLabel != "root's y -3 (1 left)" {
			t.Errorf("decision's grant: %+v", d)
		}
		return nil
	})
}

// An agent left in auto mode by an older agentd keeps its steps as a count grant.
func TestMigrationTurnsAutoStepsIntoGrant(t *testing.T) {
	ctx := context.Background()
	path, _ := migratedUpTo(t, "CREATE TABLE grants", `INSERT INTO agents (id, name, state, policy, run_id, workspace, created_at, updated_at)
		VALUES ('a-1', 'one', 'thinking', '{"mode":"auto","auto_steps":4}', 'r-1', '/tmp/ws', 1, 1),
		       ('a-2', 'two', 'thinking', '{"mode":"ask"}', 'r-2', '/tmp/ws2', 1, 1)`)
	s, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	s.View(ctx, func(tx *Tx) error {
		gs, err := tx.LiveGrants("a-1", "r-1")
		if err != nil || len(gs) != 1 || gs[0].Kind != api.GrantCount || gs[0].Count != 4 || gs[0].RunID != "r-1" {
			t.Errorf("a-1's grants: %+v, %v; want one count grant of 4 for run r-1", gs, err)
		}
		if gs, _ := tx.LiveGrants("a-2", "r-2"); len(gs) != 0 {
			t.Errorf("a-2 had no auto steps, got grants %+v", gs)
		}
		return nil
	})
}

// An exact grant keeps the files it bound across a restart; one stored before grants
// bound files reads back binding none.
func TestGrantFilesSurviveRestart(t *testing.T) {
	ctx := context.Background()
	path, _ := migratedUpTo(t, "grants ADD COLUMN files", `INSERT INTO agents (id, name, state, policy, run_id, workspace, created_at, updated_at)
		VALUES ('a-1', 'one', 'idle', '{"mode":"ask"}', 'r-1', '/tmp/ws', 1, 1);
		INSERT INTO grants (id, agent_id, kind, label, command, hash, created_at) VALUES ('g-old', 'a-1', 'exact', 'y!', 'execute_shell', 'h0', 1)`)
	s, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	files := []api.BoundFile{{Path: "build.sh", SHA256: "b1"}, {Path: "check.py", SHA256: "c1"}}
	if err := s.Tx(ctx, func(tx *Tx) error {
		return tx.InsertGrant(&api.Grant{ID: "g-new", AgentID: "a-1", Kind: api.GrantExact, Label: "y!", Command: "execute_shell", Hash: "h1", Files: files})
	}); err != nil {
		t.Fatal(err)
	}
	s.Close()
	if s, err = Open(ctx, path); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	s.View(ctx, func(tx *Tx) error {
		if g, err := tx.Grant("a-1", "g-new"); err != nil || !slices.Equal(g.Files, files) {
			t.Errorf("g-new: %+v, %v; want the files it bound", g, err)
		}
		if g, err := tx.Grant("a-1", "g-old"); err != nil || g.Files != nil {
			t.Errorf("g-old: %+v, %v; want no files", g, err)
		}
		return nil
	})
}

// migratedUpTo makes a database as an older agentd left it: the migrations before the
// first one containing marker, then seed. It returns the file and that migration's index.
func migratedUpTo(t *testing.T, marker, seed string) (path string, last int) {
	t.Helper()
	ctx := context.Background()
	path = filepath.Join(t.TempDir(), "agentd.db")
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	last = slices.IndexFunc(migrations, func(m string) bool { return strings.Contains(m, marker) })
	if last < 0 {
		t.Fatalf("no migration contains %q", marker)
	}
	for i, m := range migrations[:last] {
		if _, err := db.ExecContext(ctx, m); err != nil {
			t.Fatalf("migration %d: %v", i+1, err)
		}
	}
	if _, err := db.ExecContext(ctx, `PRAGMA user_version = `+strconv.Itoa(last)); err != nil {
		t.Fatal(err)
	}
	if _, err := db.ExecContext(ctx, seed); err != nil {
		t.Fatal(err)
	}
	return path, last
}
