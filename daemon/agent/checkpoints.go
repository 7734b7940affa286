package agent

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/agentd/agentd/api"
	"github.com/agentd/agentd/commands"
	"github.com/agentd/agentd/commands/permission"
	"github.com/agentd/agentd/daemon/agent/policy"
	"github.com/agentd/agentd/daemon/checkpoint"
	"github.com/agentd/agentd/daemon/config"
	"github.com/agentd/agentd/daemon/store"
	"github.com/agentd/agentd/internal/display"
	"golang.org/x/sys/unix"
)

// CheckpointOptions configure the workspace checkpoints ([checkpoints]): one
// daemon/checkpoint store per agent in <StateDir>/checkpoints/<agent id>/, inside the
// state directory and outside every workspace, so no sandboxed program sees it. The zero
// value takes none.
type CheckpointOptions struct {
	On    bool
	Store checkpoint.Options
	// KeepSteps is how many of an agent's latest steps stay in rewind range whatever
	// Store's bounds say (default 10).
	KeepSteps int
	// Dir is where they are kept: set by New from Options.StateDir.
	Dir string
}

// checkpoints keeps each agent's checkpoint store open and carries out the cycle's
// checkpoint, record_change and restore effects for the applier (transit.go).
type checkpoints struct {
	opt CheckpointOptions
	// rules are an agent's write-deny rules, which each step's change is held to (putBack).
	rules func(*store.Tx, *store.Agent) (commands.PathRules, error)

	mu    sync.Mutex
	open  map[string]*checkpoint.Store // by agent id
	taken map[aheadKey]takenAhead      // the checkpoint an agent's next start or end records
}

type aheadKey struct {
	agent string
	end   bool
}

// defaultKeepSteps is CheckpointOptions.KeepSteps when unset.
const defaultKeepSteps = 10

// keepSteps is how many latest steps stay in rewind range.
func (k *checkpoints) keepSteps() int { return cmp.Or(k.opt.KeepSteps, defaultKeepSteps) }

// on reports whether checkpoints are taken at all.
func (k *checkpoints) on() bool { return k != nil && k.opt.Dir != "" }

// storeOf opens agent id's store, the first time it is needed.
func (k *checkpoints) storeOf(id string) (*checkpoint.Store, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if s := k.open[id]; s != nil {
		return s, nil
	}
	if strings.ContainsAny(id, "/\x00") || id == "" || id == "." || id == ".." {
		return nil, fmt.Errorf("checkpoints: bad agent id %q", id)
	}
	dir := filepath.Join(k.opt.Dir, id)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("checkpoints: %w", err)
	}
	s, err := checkpoint.Open(dir, k.opt.Store)
	if err != nil {
		return nil, err
	}
	if k.open == nil {
		k.open = map[string]*checkpoint.Store{}
	}
	k.open[id] = s
	return s, nil
}

// remove closes and deletes a removed agent's checkpoints.
func (k *checkpoints) remove(id string) {
	if !k.on() || strings.ContainsAny(id, "/\x00") || id == "" || id == "." || id == ".." {
		return
	}
	k.mu.Lock()
	if s := k.open[id]; s != nil {
		s.Close()
		delete(k.open, id)
	}
	delete(k.taken, aheadKey{id, false})
	delete(k.taken, aheadKey{id, true})
	k.mu.Unlock()
	os.RemoveAll(filepath.Join(k.opt.Dir, id))
}

// removed is what happens once an agent is gone from the store: its checkpoints go, then
// what the server keeps of it (Options.OnAgentRemoved, if set).
func (k *checkpoints) removed(then func(id string)) func(id string) {
	return func(id string) {
		k.remove(id)
		if then != nil {
			then(id)
		}
	}
}

// closeAll closes every open store (the daemon stops).
func (k *checkpoints) closeAll() {
	if k == nil {
		return
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	for id, s := range k.open {
		s.Close()
		delete(k.open, id)
	}
}

// writes says whether a step of the command spec names, run with profile prof, may
// change the workspace and so is checkpointed (cycle.Event.Writes): not a read or a
// message, nor a sandboxed program in the bounded profile's read-only workspace. With
// checkpoints off it is so all the same: its start then ends the y! grants (before).
func (k *checkpoints) writes(spec *commands.Spec, prof commands.Profile) bool {
	if spec == nil {
		return false
	}
	switch spec.Class {
	case commands.ClassRead, commands.ClassMessage:
		return false
	}
	return !(permission.Sandboxed(spec.Name) && prof.Bounded && !prof.Write)
}

// took says whether proposal p's start took a checkpoint whose change is not recorded
// yet: its end then records it (cycle.Event.Writes on its end).
func (k *checkpoints) took(tx *store.Tx, p *api.Proposal) bool {
	if !k.on() {
		return false
	}
	c, err := tx.StepCheckpointOf(p.ID)
	return err == nil && c.Kind == store.CheckpointStep && c.After == 0
}

// ahead takes the checkpoint that p's start (writes set) or its end (writes nil)
// records — the cycle's checkpoint effect, or its record_change — before that
// transaction: the walk of a big workspace holds no store writer, and the checkpoint is
// durable before the transaction records its id. A start whose command cannot write
// (writes false) takes none, nor an end whose start took none. The latest steps'
// checkpoints are held first, so the retention this one may start keeps them in range.
func (k *checkpoints) ahead(ctx context.Context, st *store.Store, p *api.Proposal, writes func(*store.Tx, *store.Agent) bool) {
	if !k.on() {
		return
	}
	end := writes == nil
	var a *store.Agent
	var before uint64
	var keep []uint64
	var rules commands.PathRules
	var rulesErr error
	err := st.View(ctx, func(tx *store.Tx) (err error) {
		if a, err = tx.Agent(p.AgentID); err != nil {
			return err
		}
		if end {
			row, err := tx.StepCheckpointOf(p.ID)
			if errors.Is(err, store.ErrNotFound) || err == nil && (row.Kind != store.CheckpointStep || row.Before == 0 || row.After != 0) {
				a = nil
				return nil
			} else if err != nil {
				return err
			}
			before = row.Before
			if k.rules != nil {
				rules, rulesErr = k.rules(tx, a)
			}
		} else if !writes(tx, a) {
			a = nil
			return nil
		}
		keep, err = tx.RecentBefores(a.ID, k.keepSteps())
		return err
	})
	if a == nil && err == nil {
		return
	}
	t := takenAhead{proposal: p.ID, err: err}
	if err == nil {
		t.info, t.err = k.take(a, keep)
	}
	if end && a != nil {
		s, _ := k.storeOf(a.ID) // take opened it, or t.err says why not
		if t.err == nil {
			t.diff, t.err = s.Diff(ctx, checkpoint.ID(before), t.info.ID)
		}
		putBack(ctx, s, a.Workspace, rules, rulesErr, checkpoint.ID(before), &t)
	}
	k.mu.Lock()
	if k.taken == nil {
		k.taken = map[aheadKey]takenAhead{}
	}
	k.taken[aheadKey{p.AgentID, end}] = t
	k.mu.Unlock()
}

// takenFor returns the checkpoint taken ahead of p's start (or end), if it was.
func (k *checkpoints) takenFor(p *api.Proposal, end bool) (takenAhead, bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	t, ok := k.taken[aheadKey{p.AgentID, end}]
	return t, ok && t.proposal == p.ID
}

// before records the checkpoint taken ahead of step p (checkpointAhead). A checkpoint
// that failed does not stop the step: its row says why, and so does the step's result.
// With checkpoints off no change of p's will ever be seen: the y! grants end as its
// start, as at the end of a step whose change is not known (after).
func (k *checkpoints) before(tx *store.Tx, a *store.Agent, p *api.Proposal) error {
	if !k.on() {
		return endExactGrants(tx, a.ID, p, unknownChange(p)+": checkpoints are off")
	}
	row := &store.StepCheckpoint{ID: p.ID, AgentID: a.ID, RunID: p.RunID, Step: p.Step, Kind: store.CheckpointStep}
	t, ok := k.takenFor(p, false)
	switch {
	case !ok:
		row.Notice = "no checkpoint before this step, it cannot be rewound: none was taken before it started"
	case t.err != nil:
		row.Notice = "no checkpoint before this step, it cannot be rewound: " + t.err.Error()
	default:
		row.Before, row.Notice = uint64(t.info.ID), t.info.Problem()
	}
	return tx.InsertStepCheckpoint(row)
}

// take checkpoints a's workspace, holding keep (the latest steps' checkpoints) through
// the retention it may start.
func (k *checkpoints) take(a *store.Agent, keep []uint64) (checkpoint.Info, error) {
	s, err := k.storeOf(a.ID)
	if err != nil {
		return checkpoint.Info{}, err
	}
	s.Hold(ids(keep))
	walking()
	return s.Checkpoint(context.Background(), a.Workspace)
}

// testHookWalk, set by tests, runs as a checkpoint or a restore starts to walk a
// workspace: where it runs, the store's writer must be free.
var testHookWalk func()

func walking() {
	if testHookWalk != nil {
		testHookWalk()
	}
}

func ids(keep []uint64) []checkpoint.ID {
	out := make([]checkpoint.ID, len(keep))
	for i, id := range keep {
		out[i] = checkpoint.ID(id)
	}
	return out
}

// after records the checkpoint taken ahead of step p's end (checkpointAhead) and what
// the step changed, and returns that in one line for its result ("" when nothing
// changed and nothing is amiss).
func (k *checkpoints) after(tx *store.Tx, p *api.Proposal) (string, error) {
	row, err := tx.StepCheckpointOf(p.ID)
	if errors.Is(err, store.ErrNotFound) {
		return "", nil
	} else if err != nil {
		return "", err
	}
	if row.Before == 0 {
		return row.Notice, endExactGrants(tx, p.AgentID, p, unknownChange(p))
	}
	t, ok := k.takenFor(p, true)
	switch {
	case !ok:
		t.err = errors.New("no checkpoint was taken at its end")
	case t.err == nil && t.diff == nil:
		t.err = errors.New("its end's checkpoint holds no change")
	}
	if t.err != nil {
		row.Notice = "what this step changed is not known: " + t.err.Error()
		return changeLine("", row, t.putBack), errors.Join(tx.InsertStepCheckpoint(row), endExactGrants(tx, p.AgentID, p, unknownChange(p)))
	}
	d := t.diff
	row.After, row.Files, row.Added, row.Removed = uint64(t.info.ID), d.Files+d.Folders, d.Added, d.Removed
	if row.Notice == "" {
		row.Notice = t.info.Problem()
	}
	if err := tx.InsertStepCheckpoint(row); err != nil {
		return "", err
	}
	switch {
	case row.Files > 0:
		err = endExactGrants(tx, p.AgentID, p, fmt.Sprintf("step %d (%s), which changed the workspace", p.Step, p.Command))
	case row.Notice != "": // a folder a checkpoint could not capture hides what changed in it
		err = endExactGrants(tx, p.AgentID, p, unknownChange(p))
	}
	if err != nil {
		return "", err
	}
	if t.putBack != "" {
		if err := tx.Audit(p.AgentID, "put_back", map[string]string{"proposal": p.ID, "what": t.putBack}); err != nil {
			return "", err
		}
	}
	return changeLine(d.Summary(), row, t.putBack), nil
}

// changeLine is a step's change as its result ends with: "changed 3 files (+12 −4)",
// what the checkpoints could not capture, and what was put back for the deny rules.
func changeLine(summary string, row *store.StepCheckpoint, putBack string) string {
	var parts []string
	if row.Files > 0 {
		parts = append(parts, summary)
	}
	if row.Notice != "" {
		parts = append(parts, row.Notice)
	}
	if putBack != "" {
		parts = append(parts, putBack)
	}
	return strings.Join(parts, "; ")
}

// withChange is result ending with the step's change line, once (a retried
// transaction records the same step again).
func withChange(result, line string) string {
	if line == "" {
		return result
	}
	line = "[workspace: " + line + "]"
	if strings.HasSuffix(result, line) {
		return result
	}
	if result == "" {
		return line
	}
	return result + "\n" + line
}

// rewindTo is a rewind's request, for the restore effect: the step whose before state
// the workspace gets back, who asked, and — once done, so a retried transaction does
// not restore twice — what the restore did.
type rewindTo struct {
	target *store.StepCheckpoint
	by     string
	what   string // "before step 3", "before rewind rw-12"
	done   *checkpoint.Restored
	id     string // the rewind's own id, fresh for each (rw-…)
}

// restore records the rewind rw whose restore put a's workspace back as it was before
// rw's step (rewinds.restore, outside the transaction) as a step checkpoint of its own,
// so it can be undone, and tells the model in an episode.
func (k *checkpoints) restore(tx *store.Tx, a *store.Agent, rw *rewindTo, rec func(*store.Tx, string, *api.Proposal, *api.Episode) error) (*api.Episode, error) {
	if rw.done == nil || rw.id == "" {
		return nil, errMissing
	}
	d := rw.done.Diff
	row := &store.StepCheckpoint{ID: rw.id, AgentID: a.ID, RunID: a.RunID, Step: a.Step,
		Kind: store.CheckpointRewind, Before: uint64(rw.done.Before.ID), After: rw.target.Before,
		Files: d.Files + d.Folders, Added: d.Added, Removed: d.Removed, Notice: rw.done.Before.Problem()}
	if err := tx.InsertStepCheckpoint(row); err != nil {
		return nil, err
	}
	if err := endExactGrants(tx, a.ID, nil, "rewind "+rw.id+", which changed the workspace"); err != nil {
		return nil, err
	}
	ep := &api.Episode{RunID: a.RunID, Step: a.Step, ProposalID: row.ID, Command: "rewind",
		Args: fmt.Appendf(nil, `{"to_step":%d}`, rw.target.Step), Outcome: "rewound",
		Result: fmt.Sprintf("%s put the workspace back as it was %s (%s). Files are as they were then: read them again before relying on them.",
			rw.by, rw.what, d.Summary())}
	if err := rec(tx, a.ID, &api.Proposal{ID: row.ID, AgentID: a.ID, RunID: a.RunID, Step: a.Step}, ep); err != nil {
		return nil, err
	}
	return ep, tx.Audit(a.ID, "rewound", map[string]string{"to": rw.what, "by": rw.by, "undo": row.ID})
}

// endExactGrants ends the y! grants on program lines of agent id's family that step p
// (nil: a rewind) did not run under, as policy.EndExactGrantsOnChange says: why names
// the step that changed the workspace, or whose change is not known.
func endExactGrants(tx *store.Tx, id string, p *api.Proposal, why string) error {
	a, err := tx.Agent(id)
	if err != nil {
		return err
	}
	return policy.EndExactGrantsOnChange(tx, a, p, why)
}

// unknownChange is why a y! ends on step p whose change the checkpoints cannot see.
func unknownChange(p *api.Proposal) string {
	return fmt.Sprintf("step %d (%s), whose change is not known", p.Step, p.Command)
}

// checkpointOptionsOf is [checkpoints].
func checkpointOptionsOf(cfg *config.Config) CheckpointOptions {
	c := cfg.Checkpoints
	return CheckpointOptions{On: c.Enabled, KeepSteps: c.KeepSteps,
		Store: checkpoint.Options{KeepCount: c.Keep, MaxStoreBytes: int64(c.MaxBytes), MaxFileBytes: int64(c.MaxFileBytes), MaxEntries: c.MaxEntries, MinFreeBytes: int64(c.MinFreeBytes)}}
}

// doctorCheck is agentctl doctor's line on the checkpoints: on or off, and the disk they
// take against their bound.
func (k *checkpoints) doctorCheck(context.Context) []api.Check {
	if !k.on() {
		return []api.Check{{Name: "checkpoints", Status: api.CheckWarn, Detail: "off: steps are not checkpointed and cannot be rewound, " +
			"a y! on a program line ends at the start of any other step that may change the workspace (no change is seen), and write-deny rules have no second wall " +
			"(a write the sandbox's read-only binds miss, such as a file new under write_file(*.toml), is not put back)",
			Fix: "set [checkpoints] enabled = true in the config"}}
	}
	entries, err := os.ReadDir(k.opt.Dir)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return []api.Check{{Name: "checkpoints", Status: api.CheckFail, Detail: err.Error(), Fix: "check that agentd can read " + k.opt.Dir}}
	}
	used := int64(0)
	for _, e := range entries {
		n, _ := commands.DiskUsage(filepath.Join(k.opt.Dir, e.Name()))
		used += n
	}
	o := k.opt.Store
	o.KeepCount, o.MaxStoreBytes = cmp.Or(o.KeepCount, checkpoint.DefaultKeepCount), cmp.Or(o.MaxStoreBytes, checkpoint.DefaultMaxStoreBytes)
	o.MinFreeBytes = cmp.Or(o.MinFreeBytes, checkpoint.DefaultMinFreeBytes)
	o.MaxEntries = cmp.Or(o.MaxEntries, checkpoint.DefaultMaxEntries)
	c := api.Check{Name: "checkpoints", Status: api.CheckOK, Detail: fmt.Sprintf("%s for %s in %s (each keeps at most %d checkpoints and %s, each capturing at most %d files and folders; the last %d steps stay in rewind range even past those, never past twice the bytes; no new content is kept with less than %s free there)",
		display.Size(used), display.Count(len(entries), "agent", "agents"), k.opt.Dir, o.KeepCount, display.Size(o.MaxStoreBytes), o.MaxEntries, k.keepSteps(), display.Size(o.MinFreeBytes))}
	var st unix.Statfs_t
	if unix.Statfs(k.opt.Dir, &st) == nil && int64(st.Bavail)*int64(st.Bsize) < o.MinFreeBytes {
		c.Status, c.Fix = api.CheckWarn, "free disk where "+k.opt.Dir+" is: steps are checkpointed only in part until then"
	}
	return []api.Check{c}
}
