package agent

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentd/agentd/api"
	"github.com/agentd/agentd/daemon/config"
	"github.com/agentd/agentd/daemon/store"
)

// writeSteps scripts n write_file steps (f1.txt…) and a finish, creates the agent and
// approves each write, returning once the finish is proposed.
func writeSteps(t *testing.T, h *harness, n int) *api.Agent {
	t.Helper()
	var script []string
	for i := 1; i <= n; i++ {
		script = append(script, reply("write_file", map[string]string{"path": fmt.Sprintf("f%d.txt", i), "contents": strings.Repeat("x", i)}))
	}
	h.fake.Script(append(script, reply("finish", map[string]string{"reason": "done"}))...)
	a := h.create(api.CreateAgentRequest{})
	for range n {
		if _, err := h.decide(a.ID, h.pending(a.ID), "y"); err != nil {
			t.Fatal(err)
		}
	}
	h.waitFor(a.ID, "the finish", func(a *api.Agent) bool { return a.Pending != nil && a.Pending.Command == "finish" })
	return a
}

// The workspace walks of checkpoints — a step's before and after, a rewind's restore —
// run outside the store's write transaction: while they walk, another writer gets the
// store at once (here within the hook that runs as each walk starts).
func TestCheckpointWalksLeaveTheStoreWriterFree(t *testing.T) {
	h := newHarness(t, withCheckpoints)
	var mu sync.Mutex
	var walks int
	var blocked []error
	testHookWalk = func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		err := h.sup.st.Tx(ctx, func(tx *store.Tx) error { return nil })
		mu.Lock()
		defer mu.Unlock()
		walks++
		if err != nil {
			blocked = append(blocked, err)
		}
	}
	t.Cleanup(func() { testHookWalk = nil })
	a := writeSteps(t, h, 1)
	if _, err := h.rewind(a.Name, api.RewindRequest{To: 1}); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if walks < 3 || len(blocked) > 0 {
		t.Fatalf("%d walks (want the step's before and after and the rewind's); a writer was kept out during %d of them: %v", walks, len(blocked), blocked)
	}
}

// Retention keeps the latest steps in rewind range whatever [checkpoints] keep says:
// with keep = 3, a run of cheap steps does not push the first step's checkpoint out,
// and the workspace can still be rewound to before it.
func TestCheapStepsDoNotPushAStepOutOfRewindRange(t *testing.T) {
	h := newHarness(t, func(o *Options) {
		o.Checkpoints.On = true
		o.Checkpoints.Store.KeepCount = 3
	})
	a := writeSteps(t, h, 6)
	rw, err := h.rewind(a.Name, api.RewindRequest{To: 1})
	if err != nil {
		t.Fatalf("rewind to step 1 after 5 more steps: %v", err)
	}
	left, _ := filepath.Glob(filepath.Join(a.Workspace, "f*.txt"))
	if !rw.Done || len(left) != 0 {
		t.Fatalf("after the rewind to before step 1 the workspace holds %v (%+v)", left, rw)
	}
	if c := h.sup.checkpoints.doctorCheck(context.Background())[0]; !strings.Contains(c.Detail, "the last 10 steps stay in rewind range") {
		t.Errorf("doctor's checkpoints line does not say what stays in rewind range: %+v", c)
	}
}

// Each rewind has an id of its own, even when the workspace did not change between
// two rewinds: undoing an earlier one still finds it.
func TestEachRewindHasAFreshID(t *testing.T) {
	h := newHarness(t, withCheckpoints)
	a := writeSteps(t, h, 1)
	seen := map[string]bool{}
	var first string
	for i := range 3 {
		rw, err := h.rewind(a.Name, api.RewindRequest{To: 1})
		if err != nil {
			t.Fatal(err)
		}
		if seen[rw.Undo] {
			t.Fatalf("rewind %d got the id %s of an earlier one", i+1, rw.Undo)
		}
		seen[rw.Undo] = true
		if i == 0 {
			first = rw.Undo
		}
	}
	if _, err := h.rewind(a.Name, api.RewindRequest{Undo: first}); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(a.Workspace, "f1.txt")); err != nil || string(b) != "x" {
		t.Fatalf("undoing the first rewind did not bring f1.txt back: %q, %v", b, err)
	}
}

// [checkpoints] max_entries bounds the files and folders a checkpoint captures (a
// million by default) and min_free_bytes the free disk it leaves on the state dir (512
// MiB by default); doctor's checkpoints line says the bounds in force.
func TestCheckpointBoundsAreConfigKeysDoctorShows(t *testing.T) {
	cfg := config.Default()
	if got := checkpointOptionsOf(cfg).Store.MaxEntries; got != 1_000_000 {
		t.Errorf("default max_entries reaches the store as %d, want 1000000", got)
	}
	if got := checkpointOptionsOf(cfg).Store.MinFreeBytes; got != 512<<20 {
		t.Errorf("default min_free_bytes reaches the store as %d, want 512 MiB", got)
	}
	cfg.Checkpoints.MaxEntries, cfg.Checkpoints.MinFreeBytes = 5000, 3<<20
	opt := checkpointOptionsOf(cfg)
	if opt.Store.MaxEntries != 5000 || opt.Store.MinFreeBytes != 3<<20 {
		t.Fatalf("max_entries = 5000, min_free_bytes = 3MiB reach the store as %d, %d", opt.Store.MaxEntries, opt.Store.MinFreeBytes)
	}
	h := newHarness(t, func(o *Options) { o.Checkpoints.On, o.Checkpoints.Store = true, opt.Store })
	c := h.sup.checkpoints.doctorCheck(context.Background())[0]
	if !strings.Contains(c.Detail, "at most 5000 files and folders") {
		t.Errorf("doctor's checkpoints line does not show max_entries: %+v", c)
	}
	if !strings.Contains(c.Detail, "less than 3 MiB free") {
		t.Errorf("doctor's checkpoints line does not show min_free_bytes: %+v", c)
	}
}

// With checkpoints off doctor says the write-deny rules lose their second wall, not only
// rewinds: nothing puts back a write the sandbox's read-only binds miss.
func TestDoctorSaysCheckpointsOffLeavesNoSecondWall(t *testing.T) {
	c := (&checkpoints{}).doctorCheck(context.Background())[0]
	if c.Status != api.CheckWarn || !strings.Contains(c.Detail, "write-deny rules have no second wall") || !strings.Contains(c.Fix, "enabled = true") {
		t.Errorf("doctor's line with checkpoints off does not say the deny rules lose their second wall: %+v", c)
	}
}
