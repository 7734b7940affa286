package agent

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentd/agentd/api"
)

func withCheckpoints(o *Options) { o.Checkpoints.On = true }

// A write step is checkpointed before it runs; its result, history and diff say what it
// changed; a rewind puts the workspace back, is recorded and told to the model on its
// next step, and can itself be undone.
func TestWriteStepIsCheckpointedShownRewoundAndUndone(t *testing.T) {
	h := newHarness(t, withCheckpoints)
	ctx := context.Background()
	h.fake.Script(
		reply("write_file", map[string]string{"path": "notes/a.txt", "contents": "hello\nworld\n"}),
		reply("read_file", map[string]string{"path": "notes/a.txt"}),
		reply("finish", map[string]string{"reason": "done"}))
	a := h.create(api.CreateAgentRequest{})
	h.approve(a.ID, "write_file")
	p2 := h.pending(a.ID) // read_file: the write has ended
	eps := h.history(a.ID)
	if len(eps) != 1 || !strings.HasSuffix(eps[0].Result, "[workspace: changed 1 file and 1 folder (+2 −0)]") {
		t.Fatalf("the write's episode does not say what it changed: %+v", eps)
	}
	c, err := h.sup.rewinds.Diff(ctx, a.Name, api.DiffRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if c.Step != 1 || c.Command != "write_file" || c.Files != 2 || c.Added != 2 || c.Running ||
		!strings.Contains(c.Preview.Diff, "+hello") || !strings.Contains(c.Preview.Diff, "created file notes/a.txt") {
		t.Fatalf("diff of step 1 = %+v, preview %+v", c, c.Preview)
	}

	dry, err := h.sup.rewinds.Rewind(ctx, a.Name, api.RewindRequest{To: 1, DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(a.Workspace, "notes", "a.txt")
	if _, err := os.Stat(file); dry.Done || err != nil || !strings.Contains(dry.Restore.Preview.Diff, "deleted file notes/a.txt") {
		t.Fatalf("a dry run changed the workspace or does not say what it would delete: %+v, %v", dry, err)
	}
	rw, err := h.rewind(a.Name, api.RewindRequest{To: 1, By: "ana"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(file); !rw.Done || !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("after the rewind notes/a.txt is still there (%v), or the rewind says %+v", err, rw)
	}
	eps = h.history(a.ID)
	if last := eps[len(eps)-1]; last.Command != "rewind" || !strings.Contains(last.Result, "ana put the workspace back as it was before step 1") {
		t.Fatalf("the history does not record the rewind: %+v", last)
	}
	if _, err := h.decide(a.ID, p2, "y"); err != nil {
		t.Fatal(err)
	}
	h.pending(a.ID) // finish: the prompt that proposed it came after the rewind
	reqs := h.fake.Requests()
	if prompt := joinContent(reqs[len(reqs)-1].Messages); !strings.Contains(prompt, "rewind") || !strings.Contains(prompt, "before step 1") {
		t.Errorf("the model was not told of the rewind:\n%s", prompt)
	}

	if _, err := h.rewind(a.Name, api.RewindRequest{Undo: rw.Undo}); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(file); err != nil || string(b) != "hello\nworld\n" {
		t.Fatalf("undoing the rewind did not bring notes/a.txt back: %q, %v", b, err)
	}
	if c := h.sup.checkpoints.doctorCheck(ctx)[0]; c.Status != api.CheckOK || !strings.Contains(c.Detail, "for 1 agent in") || strings.HasPrefix(c.Detail, "0 B") {
		t.Errorf("doctor's checkpoints line = %+v", c)
	}
	if _, err := h.sup.runs.Stop(ctx, a.ID); err != nil {
		t.Fatal(err)
	}
	if err := h.sup.runs.DeleteAgent(ctx, a.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(h.dir, "checkpoints", a.ID)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a removed agent's checkpoints stay: %v", err)
	}
}

// A read takes no checkpoint (the table's writes flag is off for it), and a diff of it
// says so and how to find the steps that have one.
func TestReadStepIsNotCheckpointed(t *testing.T) {
	h := newHarness(t, withCheckpoints)
	h.fake.Script(reply("list_folder", map[string]string{"path": "."}), reply("finish", map[string]string{"reason": "done"}))
	a := h.create(api.CreateAgentRequest{})
	h.approve(a.ID, "list_folder")
	h.pending(a.ID)
	_, err := h.sup.rewinds.Diff(context.Background(), a.Name, api.DiffRequest{Step: 1})
	if !errors.Is(err, api.ErrNotFound) || !strings.Contains(err.Error(), "no checkpointed step 1") {
		t.Fatalf("diff of a read step: %v", err)
	}
	if _, err := os.Stat(filepath.Join(h.dir, "checkpoints", a.ID)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a read step opened a checkpoint store: %v", err)
	}
}

// A rewind is refused while a step is in flight (here ask_user's question), with the
// reason and the fix; and a request that names neither a step nor a rewind, or a hostile
// rewind id, is refused without touching the workspace.
func TestRewindRefusedWhileAStepIsStartedAndForBadRequests(t *testing.T) {
	h := newHarness(t, withCheckpoints)
	ctx := context.Background()
	h.fake.Script(
		reply("write_file", map[string]string{"path": "a.txt", "contents": "x"}),
		reply("ask_user", map[string]string{"question": "go on?"}))
	a := h.create(api.CreateAgentRequest{})
	h.approve(a.ID, "write_file")
	h.waitFor(a.ID, "the question", func(a *api.Agent) bool { return a.Question != nil })
	_, err := h.rewind(a.Name, api.RewindRequest{To: 1})
	if !errors.Is(err, api.ErrConflict) || !strings.Contains(err.Error(), "is running step 2 (ask_user)") {
		t.Fatalf("rewind while a question is open: %v", err)
	}
	for _, req := range []api.RewindRequest{{}, {To: 1, Undo: "rw-1"}, {To: -1}, {Undo: "../../etc"}, {Undo: "rw-1/../x"}} {
		if _, err := h.sup.rewinds.Rewind(ctx, a.Name, req); err == nil {
			t.Errorf("rewind %+v was not refused", req)
		}
	}
	if b, err := os.ReadFile(filepath.Join(a.Workspace, "a.txt")); err != nil || string(b) != "x" {
		t.Fatalf("a refused rewind changed the workspace: %q, %v", b, err)
	}
}

// A parent's rewind is refused while one of its helpers runs (its folder under agents/
// would be rewritten under it), and leaves the helper's files as they are.
func TestRewindRefusedWhileAHelperRuns(t *testing.T) {
	h, b := newHelperHarness(t, withCheckpoints)
	ctx := context.Background()
	b.script("boss",
		reply("write_file", map[string]string{"path": "a.txt", "contents": "x"}),
		reply("start_agent", map[string]string{"name": "h", "task": "t", "prompt": "go"}),
		reply("finish", map[string]string{"reason": "done"}))
	b.script("boss/h",
		reply("finish", map[string]string{"reason": "nothing yet"}),
		reply("write_file", map[string]string{"path": "work.txt", "contents": "the helper's"}),
		reply("finish", map[string]string{"reason": "wrote"}))
	boss := h.boss()
	h.approve(boss.ID, "write_file")
	h.approve(boss.ID, "start_agent")
	helper := h.helper("boss/h")
	h.approve(helper.ID, "finish")
	h.pending(boss.ID) // finish: the helper's end was delivered
	if _, err := h.sup.runs.Task(ctx, helper.ID, "write work.txt"); err != nil {
		t.Fatal(err)
	}
	h.approve(helper.ID, "write_file")
	h.pending(helper.ID) // the helper runs on, asking to finish
	_, err := h.rewind(boss.Name, api.RewindRequest{To: 1})
	if !errors.Is(err, api.ErrConflict) || !strings.Contains(err.Error(), "has helpers running (boss/h)") {
		t.Fatalf("rewind while a helper runs: %v", err)
	}
	if b, err := os.ReadFile(filepath.Join(helper.Workspace, "work.txt")); err != nil || string(b) != "the helper's" {
		t.Fatalf("a refused rewind touched the helper's folder: %q, %v", b, err)
	}
	if _, err := os.Stat(filepath.Join(boss.Workspace, "a.txt")); err != nil {
		t.Fatalf("a refused rewind changed the workspace: %v", err)
	}
}

// A step number starts again in every run: diff and rewind take the latest run's step by
// default, name the other runs that have one, and with Run take that run's.
func TestStepNumberOfAnEarlierRunIsPickedByRun(t *testing.T) {
	h := newHarness(t, withCheckpoints)
	ctx := context.Background()
	h.fake.Script(
		reply("write_file", map[string]string{"path": "first.txt", "contents": "one\n"}),
		reply("finish", map[string]string{"reason": "done"}),
		reply("write_file", map[string]string{"path": "second.txt", "contents": "two\n"}),
		reply("finish", map[string]string{"reason": "done"}))
	a := h.create(api.CreateAgentRequest{})
	first := a.RunID
	h.approve(a.ID, "write_file")
	h.approve(a.ID, "finish")
	h.waitFor(a.ID, "the first run's end", func(a *api.Agent) bool { return a.State == api.StateIdle })
	b, err := h.sup.runs.Task(ctx, a.ID, "again")
	if err != nil {
		t.Fatal(err)
	}
	h.approve(a.ID, "write_file")
	h.approve(a.ID, "finish")
	h.waitFor(a.ID, "the second run's end", func(a *api.Agent) bool { return a.State == api.StateIdle })

	latest, err := h.sup.rewinds.Diff(ctx, a.Name, api.DiffRequest{Step: 1})
	if err != nil {
		t.Fatal(err)
	}
	if latest.RunID != b.RunID || !strings.Contains(latest.Preview.Diff, "second.txt") || len(latest.OtherRuns) != 1 || latest.OtherRuns[0] != first {
		t.Fatalf("step 1 without a run = run %s, other runs %v, diff %q; want the latest run %s's, naming %s", latest.RunID, latest.OtherRuns, latest.Preview.Diff, b.RunID, first)
	}
	earlier, err := h.sup.rewinds.Diff(ctx, a.Name, api.DiffRequest{Step: 1, Run: first})
	if err != nil {
		t.Fatal(err)
	}
	if earlier.RunID != first || !strings.Contains(earlier.Preview.Diff, "first.txt") || strings.Contains(earlier.Preview.Diff, "second.txt") {
		t.Fatalf("step 1 of run %s = run %s, diff %q", first, earlier.RunID, earlier.Preview.Diff)
	}
	plan, err := h.sup.rewinds.Rewind(ctx, a.Name, api.RewindRequest{To: 1, Run: first, DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	if plan.Restore.RunID != first || !strings.Contains(plan.Restore.Preview.Diff, "deleted file second.txt") || !strings.Contains(plan.Restore.Preview.Diff, "deleted file first.txt") {
		t.Fatalf("a rewind to before run %s's step 1 = %+v, diff %q", first, plan.Restore, plan.Restore.Preview.Diff)
	}
	if _, err := h.sup.rewinds.Diff(ctx, a.Name, api.DiffRequest{Step: 1, Run: "r-none"}); !errors.Is(err, api.ErrNotFound) || !strings.Contains(err.Error(), "step 1 in run r-none") {
		t.Errorf("diff of a run without that step: %v", err)
	}
	byID, err := h.sup.rewinds.Rewind(ctx, a.Name, api.RewindRequest{ID: earlier.ID, DryRun: true})
	if err != nil || byID.Restore.RunID != first || byID.Step != 1 {
		t.Fatalf("a rewind naming run %s's step 1 by its id %s = %+v, %v", first, earlier.ID, byID, err)
	}
}

// A run's checkpointed steps taken together — a team's turn is a run of its role agent —
// are shown by naming the run alone, and a rewind naming the run alone goes back to
// before its first step.
func TestWholeRunIsShownAndRewoundByItsID(t *testing.T) {
	h := newHarness(t, withCheckpoints)
	ctx := context.Background()
	h.fake.Script(
		reply("write_file", map[string]string{"path": "kept.txt", "contents": "before\n"}),
		reply("finish", map[string]string{"reason": "done"}),
		reply("write_file", map[string]string{"path": "a.txt", "contents": "a\n"}),
		reply("write_file", map[string]string{"path": "b.txt", "contents": "b\n"}),
		reply("finish", map[string]string{"reason": "done"}))
	a := h.create(api.CreateAgentRequest{})
	h.approve(a.ID, "write_file")
	h.approve(a.ID, "finish")
	h.waitFor(a.ID, "the first run's end", func(a *api.Agent) bool { return a.State == api.StateIdle })
	turn, err := h.sup.runs.Task(ctx, a.ID, "the turn")
	if err != nil {
		t.Fatal(err)
	}
	h.approve(a.ID, "write_file")
	h.approve(a.ID, "write_file")
	h.approve(a.ID, "finish")
	h.waitFor(a.ID, "the turn's end", func(a *api.Agent) bool { return a.State == api.StateIdle })

	c, err := h.sup.rewinds.Diff(ctx, a.Name, api.DiffRequest{Run: turn.RunID})
	if err != nil {
		t.Fatal(err)
	}
	if c.Kind != "run" || c.ID != turn.RunID || c.Files != 2 || !strings.Contains(c.Preview.Diff, "created file a.txt") ||
		!strings.Contains(c.Preview.Diff, "created file b.txt") || strings.Contains(c.Preview.Diff, "kept.txt") {
		t.Fatalf("the run's change = %+v, diff %q; want a.txt and b.txt, not the earlier run's kept.txt", c, c.Preview.Diff)
	}
	rw, err := h.rewind(a.Name, api.RewindRequest{Run: turn.RunID, By: "ana"})
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]bool{"kept.txt": true, "a.txt": false, "b.txt": false} {
		if _, err := os.Stat(filepath.Join(a.Workspace, name)); (err == nil) != want {
			t.Errorf("after rewinding run %s, %s there = %v, want %v", turn.RunID, name, err == nil, want)
		}
	}
	if eps := h.history(a.ID); !strings.Contains(eps[len(eps)-1].Result, "before run "+turn.RunID) || !rw.Done {
		t.Errorf("the rewind's episode does not name the run: %+v", eps[len(eps)-1])
	}
}

// A step the policy approves starts in the transaction that stores its proposal: it is
// checkpointed before that all the same, so it can be told, rewound and put back.
func TestStepThePolicyApprovesIsCheckpointed(t *testing.T) {
	h := newHarness(t, withCheckpoints, func(o *Options) { o.Allow = []string{"write_file(notes/*)"} })
	h.fake.Script(
		reply("write_file", map[string]string{"path": "notes/a.txt", "contents": "hello\n"}),
		reply("read_file", map[string]string{"path": "notes/a.txt"}),
		reply("finish", map[string]string{"reason": "done"}))
	a := h.create(api.CreateAgentRequest{})
	h.pending(a.ID) // read_file: the write, approved by the pattern, has ended
	eps := h.history(a.ID)
	if len(eps) != 1 || eps[0].Decision == nil || eps[0].Decision.Source != "policy" ||
		!strings.HasSuffix(eps[0].Result, "[workspace: changed 1 file and 1 folder (+1 −0)]") {
		t.Fatalf("the pattern-approved write's episode does not say what it changed: %+v", eps)
	}
	if _, err := h.rewind(a.Name, api.RewindRequest{To: 1, By: "ana"}); err != nil {
		t.Fatalf("the pattern-approved step cannot be rewound: %v", err)
	}
	if _, err := os.Stat(filepath.Join(a.Workspace, "notes", "a.txt")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("after the rewind notes/a.txt: %v, want it gone", err)
	}
}

// rewind asks for req's dry run, then applies it with the workspace the dry run showed
// (Rewind.From as RewindRequest.Shown), as every front end does.
func (h *harness) rewind(ref string, req api.RewindRequest) (*api.Rewind, error) {
	dry := req
	dry.DryRun = true
	plan, err := h.sup.rewinds.Rewind(context.Background(), ref, dry)
	if err != nil {
		return nil, err
	}
	req.Shown = plan.From
	return h.sup.rewinds.Rewind(context.Background(), ref, req)
}

// dryRun is the dry run of rewinding agent ref as req asks.
func (h *harness) dryRun(ref string, req api.RewindRequest) *api.Rewind {
	h.t.Helper()
	req.DryRun = true
	plan, err := h.sup.rewinds.Rewind(context.Background(), ref, req)
	if err != nil {
		h.t.Fatal(err)
	}
	return plan
}

// A rewind applies what its dry run showed: when the workspace changed between the dry
// run and the confirm, the confirm is refused with what to do, and the workspace keeps
// the change; a confirm that names the workspace as it is applies.
func TestRewindRefusesAWorkspaceChangedSinceTheDryRunShowedIt(t *testing.T) {
	h := newHarness(t, withCheckpoints)
	ctx := context.Background()
	a := writeSteps(t, h, 1)
	plan := h.dryRun(a.Name, api.RewindRequest{To: 1})
	if len(plan.From) != 64 {
		t.Fatalf("the dry run names no workspace root: From = %q", plan.From)
	}
	late := filepath.Join(a.Workspace, "late.txt")
	if err := os.WriteFile(late, []byte("written after the dry run"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := h.sup.rewinds.Rewind(ctx, a.Name, api.RewindRequest{To: 1, Shown: plan.From[:16], By: "ana"})
	if !errors.Is(err, api.ErrConflict) || !strings.Contains(err.Error(), "the workspace changed since the rewind was shown") ||
		!strings.Contains(err.Error(), "ask again") {
		t.Fatalf("confirm after the workspace changed: %v", err)
	}
	if _, err := os.Stat(late); err != nil {
		t.Fatalf("a refused rewind removed late.txt: %v", err)
	}
	if _, err := os.Stat(filepath.Join(a.Workspace, "f1.txt")); err != nil {
		t.Fatalf("a refused rewind changed the workspace: %v", err)
	}
	again := h.dryRun(a.Name, api.RewindRequest{To: 1})
	done, err := h.sup.rewinds.Rewind(ctx, a.Name, api.RewindRequest{To: 1, Shown: again.From, By: "ana"})
	if err != nil || !done.Done {
		t.Fatalf("confirm of a fresh dry run: %+v, %v", done, err)
	}
	if _, err := os.Stat(late); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the rewind shown with late.txt did not remove it: %v", err)
	}
}

// A capture holds file times too, so a file only touched since the dry run gives the
// workspace another root: the confirm still applies, since nothing a diff shows (what
// the person was shown) changed.
func TestRewindAppliesWhenOnlyFileTimesChangedSinceTheDryRun(t *testing.T) {
	h := newHarness(t, withCheckpoints)
	ctx := context.Background()
	a := writeSteps(t, h, 1)
	plan := h.dryRun(a.Name, api.RewindRequest{To: 1})
	old := time.Date(2020, 1, 2, 3, 4, 5, 0, time.UTC)
	if err := os.Chtimes(filepath.Join(a.Workspace, "f1.txt"), old, old); err != nil {
		t.Fatal(err)
	}
	if again, err := h.sup.rewinds.Rewind(ctx, a.Name, api.RewindRequest{To: 1, DryRun: true}); err != nil || again.From == plan.From {
		t.Fatalf("touching f1.txt did not give the workspace another root (%v), so this checks nothing", err)
	}
	done, err := h.sup.rewinds.Rewind(ctx, a.Name, api.RewindRequest{To: 1, Shown: plan.From, By: "ana"})
	if err != nil || !done.Done {
		t.Fatalf("confirm of a workspace whose content is as shown: %+v, %v", done, err)
	}
}

// A confirm without the workspace it was shown (an older client) or with something
// that is no dry run's root is refused with the fix, and changes nothing.
func TestRewindWithoutTheShownWorkspaceIsRefusedWithTheFix(t *testing.T) {
	h := newHarness(t, withCheckpoints)
	ctx := context.Background()
	a := writeSteps(t, h, 1)
	for shown, want := range map[string]string{
		"":                 "ask with dry_run first and send its from back as shown",
		"abc":              "want 16 to 64 lowercase hex characters",
		"ABCDEF0123456789": "want 16 to 64 lowercase hex characters",
		"0000000000000000": "the workspace changed since the rewind was shown",
	} {
		_, err := h.sup.rewinds.Rewind(ctx, a.Name, api.RewindRequest{To: 1, Shown: shown})
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("rewind with shown %q: %v; want %q", shown, err, want)
		}
	}
	if _, err := os.Stat(filepath.Join(a.Workspace, "f1.txt")); err != nil {
		t.Fatalf("a refused rewind changed the workspace: %v", err)
	}
}

// A whole run's rewind is named by the id its dry run showed (the run's), as a chat
// button sends it back.
func TestWholeRunRewindIsNamedByTheIDItsDryRunShowed(t *testing.T) {
	h := newHarness(t, withCheckpoints)
	h.fake.Script(
		reply("write_file", map[string]string{"path": "a.txt", "contents": "a\n"}),
		reply("finish", map[string]string{"reason": "done"}))
	a := h.create(api.CreateAgentRequest{})
	h.approve(a.ID, "write_file")
	h.approve(a.ID, "finish")
	run := h.waitFor(a.ID, "end", func(a *api.Agent) bool { return a.State == api.StateIdle }).RunID
	plan := h.dryRun(a.Name, api.RewindRequest{Run: run})
	done, err := h.rewind(a.Name, api.RewindRequest{ID: plan.Restore.ID, By: "ana"})
	if err != nil {
		t.Fatalf("rewinding by the whole run's id %s: %v", plan.Restore.ID, err)
	}
	if _, err := os.Stat(filepath.Join(a.Workspace, "a.txt")); !done.Done || !os.IsNotExist(err) {
		t.Errorf("after the whole run's rewind: done=%v, a.txt: %v; want it gone", done.Done, err)
	}
}
