package agent

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/agentd/agentd/api"
	"github.com/agentd/agentd/daemon/agent/cycle"
	"github.com/agentd/agentd/daemon/checkpoint"
	"github.com/agentd/agentd/daemon/store"
	"github.com/agentd/agentd/internal/randid"
)

// rewinds serves the checkpoints to people: what a step changed (agentctl diff) and
// putting the workspace back (agentctl rewind), which is the cycle's rewind event.
type rewinds struct {
	ckpt *checkpoints
	st   *store.Store
	// What a rewind needs of the runs and the episodes: changing an agent under its
	// runner's lock, the restore first outside the transaction, and telling the model.
	mutate        func(ctx context.Context, ref string, first func(id string) error, fn func(tx *store.Tx, a *store.Agent) error, shows *change) (*api.Agent, error)
	recordEpisode func(tx *store.Tx, agentID string, p *api.Proposal, ep *api.Episode) error
}

var _ api.CheckpointService = (*rewinds)(nil)

// Diff returns what a step changed: between its checkpoints once it ended, or from its
// checkpoint to the workspace now while it runs.
func (s *rewinds) Diff(ctx context.Context, ref string, req api.DiffRequest) (*api.StepChange, error) {
	if req.Step < 0 {
		return nil, badRequest("step %d: want a step number like 3 (agentctl history lists them)", req.Step)
	}
	var a *store.Agent
	var row *span
	var p *api.Proposal
	var others []string
	err := s.st.View(ctx, func(tx *store.Tx) (err error) {
		if a, row, err = s.find(tx, ref, stepAt{step: req.Step, run: req.Run, whole: req.Run != "" && req.Step == 0}); err != nil {
			return err
		}
		if p, err = tx.Proposal(row.last); err != nil {
			return err
		}
		others, err = otherRuns(tx, &row.StepCheckpoint)
		return err
	})
	if err != nil {
		return nil, err
	}
	store_, err := s.ckpt.storeOf(a.ID)
	if err != nil {
		return nil, err
	}
	var d *checkpoint.Diff
	if row.After != 0 {
		d, err = store_.Diff(ctx, checkpoint.ID(row.Before), checkpoint.ID(row.After))
	} else {
		d, err = store_.DiffLive(ctx, a.Workspace, checkpoint.ID(row.Before))
	}
	if err != nil {
		return nil, dropped(a, &row.StepCheckpoint, err)
	}
	c := stepChange(a, &row.StepCheckpoint, d)
	c.Running, c.OtherRuns = row.After == 0 && p.Status == api.ProposalStarted, others
	if row.Kind != runSpan {
		c.Command = p.Command
	}
	return c, nil
}

// stepAt names a checkpointed step: by number (0: the latest) in run ("" the latest run
// with it), or by id (a step's or, with undo, only a rewind's); or with whole, all the
// checkpointed steps of run together (a team's turn is a run of its role agent).
type stepAt struct {
	step  int
	run   string
	id    string
	undo  bool
	whole bool
}

// runSpan is the Kind of a run's steps taken together (StepChange.Kind "run").
const runSpan = "run"

// span is a checkpointed step, or a run's steps together: Before its first step's, the
// rest its last step's (last: that step's id).
type span struct {
	store.StepCheckpoint
	last string
}

// find resolves ref and the checkpointed step at names.
func (s *rewinds) find(tx *store.Tx, ref string, at stepAt) (*store.Agent, *span, error) {
	if !s.ckpt.on() {
		return nil, nil, conflict("checkpoints are off ([checkpoints] enabled = false): no step can be shown or rewound")
	}
	a, err := resolve(tx, ref)
	if err != nil {
		return nil, nil, err
	}
	if at.id != "" && !at.undo {
		// A whole run's rewind is named by its run's id (chat's buttons carry the id a
		// dry run showed, StepChange.ID).
		if _, err := tx.RunFirstCheckpoint(a.ID, at.id); err == nil {
			at = stepAt{run: at.id, whole: true}
		}
	}
	var row *store.StepCheckpoint
	if at.id != "" {
		row, err = tx.StepCheckpointOf(at.id)
		if err == nil && (row.AgentID != a.ID || at.undo && row.Kind != store.CheckpointRewind) {
			err = store.ErrNotFound
		}
		if errors.Is(err, store.ErrNotFound) {
			return nil, nil, notFound("agent %s has no step or rewind %q: the id is in the rewind's reply and in `agentctl history %s`", a.Name, at.id, a.Name)
		}
	} else if row, err = tx.StepCheckpointAt(a.ID, at.run, at.step); errors.Is(err, store.ErrNotFound) {
		what := fmt.Sprintf("step %d", at.step)
		if at.step == 0 {
			what = "step"
		}
		if at.run != "" {
			what += " in run " + at.run
		}
		return nil, nil, notFound("agent %s has no checkpointed %s: only steps that may change the workspace are (`agentctl history %s` lists them)", a.Name, what, a.Name)
	}
	if err != nil {
		return nil, nil, err
	}
	sp := &span{StepCheckpoint: *row, last: row.ID}
	if at.whole {
		first, err := tx.RunFirstCheckpoint(a.ID, at.run)
		if err != nil {
			return nil, nil, err
		}
		sp.ID, sp.Kind, sp.Step, sp.Before, sp.Notice = at.run, runSpan, first.Step, first.Before, cmp.Or(first.Notice, row.Notice)
	}
	if sp.Before == 0 {
		return nil, nil, conflict("step %d of agent %s has no checkpoint: %s", sp.Step, a.Name, sp.Notice)
	}
	return a, sp, nil
}

// dropped is err, or when the checkpoint is gone, why and what to do.
func dropped(a *store.Agent, row *store.StepCheckpoint, err error) error {
	if errors.Is(err, checkpoint.ErrNotFound) {
		return notFound("the checkpoints of step %d of agent %s were dropped to keep within [checkpoints] keep and max_bytes; raise them to keep more", row.Step, a.Name)
	}
	return err
}

// stepChange is d as the API shows a step's change.
func stepChange(a *store.Agent, row *store.StepCheckpoint, d *checkpoint.Diff) *api.StepChange {
	text := d.Text()
	_, rest, _ := strings.Cut(text, "\n") // the first line is the summary
	return &api.StepChange{AgentID: a.ID, Agent: a.Name, ID: row.ID, RunID: row.RunID, Step: row.Step, Kind: row.Kind,
		Files: d.Files + d.Folders, Added: d.Added, Removed: d.Removed, Summary: d.Summary(), Notice: row.Notice, At: row.At,
		Preview: &api.Preview{Kind: api.PreviewChange, Summary: d.Summary(), Diff: strings.TrimPrefix(rest, "\n")}}
}

// Rewind puts the workspace back as before a step (or undoes a rewind): the cycle's
// rewind event, refused while a step is in flight; with DryRun it only says what would
// change, from a checkpoint of the workspace now.
func (s *rewinds) Rewind(ctx context.Context, ref string, req api.RewindRequest) (*api.Rewind, error) {
	at, err := rewindAt(req)
	if err != nil {
		return nil, err
	}
	var a *store.Agent
	var sp *span
	var others []string
	if err := s.st.View(ctx, func(tx *store.Tx) (err error) {
		if a, sp, err = s.find(tx, ref, at); err != nil {
			return err
		}
		others, err = otherRuns(tx, &sp.StepCheckpoint)
		return err
	}); err != nil {
		return nil, err
	}
	row := &sp.StepCheckpoint
	rw := &rewindTo{target: row, by: cmp.Or(req.By, "a person"), what: fmt.Sprintf("before step %d", row.Step)}
	switch row.Kind {
	case store.CheckpointRewind:
		rw.what = "before rewind " + row.ID
	case runSpan:
		rw.what = "before run " + row.ID
	}
	out := &api.Rewind{AgentID: a.ID, Agent: a.Name, Step: row.Step}
	if row.Kind == store.CheckpointRewind {
		out.Step = 0
	}
	if req.DryRun {
		st, err := s.ckpt.storeOf(a.ID)
		if err != nil {
			return nil, err
		}
		now, err := st.Checkpoint(ctx, a.Workspace)
		if err != nil {
			return nil, err
		}
		d, err := st.Diff(ctx, now.ID, checkpoint.ID(row.Before))
		if err != nil {
			return nil, dropped(a, row, err)
		}
		out.Restore = *stepChange(a, row, d)
		out.Restore.OtherRuns, out.From = others, now.Root()
		return out, nil
	}
	var ep *api.Episode
	shows := &change{ev: cycle.Event{Kind: cycle.Rewind}, ckpt: s.ckpt, rewind: rw, rec: s.recordEpisode}
	_, err = s.mutate(ctx, a.ID, func(id string) error { return s.restore(ctx, id, rw, req.Shown) }, func(tx *store.Tx, cur *store.Agent) error {
		p, err := orNone(tx.OpenProposal(cur.ID))
		if err != nil {
			return err
		}
		shows.a, shows.p = cur, p
		res, err := apply(tx, shows)
		if err := running(err, cur, p); err != nil {
			return err
		}
		ep = res.episode
		return err
	}, shows)
	if err != nil {
		return nil, dropped(a, row, err)
	}
	out.Done, out.Undo = true, ep.ProposalID
	out.Restore = *stepChange(a, row, rw.done.Diff)
	out.Restore.OtherRuns = others
	return out, nil
}

// rewindAt reads which step req names: exactly one of To (with Run), Run alone (before
// the run's first step), ID and Undo.
func rewindAt(req api.RewindRequest) (stepAt, error) {
	named := 0
	for _, set := range []bool{req.To != 0 || req.Run != "", req.ID != "", req.Undo != ""} {
		if set {
			named++
		}
	}
	if named != 1 || req.To < 0 {
		return stepAt{}, badRequest("name the step to rewind to (--to STEP, a step number from `agentctl history`, with --run RUN for an earlier run's) or the rewind to undo (--undo rw-…), one of them")
	}
	if !req.DryRun && req.Shown == "" {
		return stepAt{}, badRequest("a rewind applies the change its dry run showed: ask with dry_run first and send its from back as shown (an older agentctl or web console does not: update it, or ask again in chat)")
	}
	if !req.DryRun && (len(req.Shown) < minShown || len(req.Shown) > 64 || strings.Trim(req.Shown, "0123456789abcdef") != "") {
		return stepAt{}, badRequest("shown is not a dry run's from: want %d to 64 lowercase hex characters, as the dry run returned it", minShown)
	}
	if req.Undo != "" {
		return stepAt{id: req.Undo, undo: true}, nil
	}
	return stepAt{step: req.To, run: req.Run, id: req.ID, whole: req.Run != "" && req.To == 0}, nil
}

// otherRuns are the runs besides row's with a checkpointed step of row's number.
func otherRuns(tx *store.Tx, row *store.StepCheckpoint) ([]string, error) {
	if row.Kind != store.CheckpointStep { // a rewind's, or a whole run's
		return nil, nil
	}
	runs, err := tx.StepRuns(row.AgentID, row.Step)
	return slices.DeleteFunc(runs, func(r string) bool { return r == row.RunID }), err
}

// minShown is the shortest RewindRequest.Shown taken: the 16 hex a chat button carries.
const minShown = 16

// restore puts agent id's workspace back for rw, under the runner's lock and before the
// transaction that records it (the cycle's restore effect), when the cycle allows a
// rewind now and the workspace is the one shown; the latest steps' checkpoints are held
// through the retention it may start. The rewind gets a fresh id, the one its undo names.
func (s *rewinds) restore(ctx context.Context, id string, rw *rewindTo, shown string) error {
	var a *store.Agent
	var keep []uint64
	err := s.st.View(ctx, func(tx *store.Tx) error {
		var err error
		if a, err = tx.Agent(id); err != nil {
			return err
		}
		p, err := orNone(tx.OpenProposal(id))
		if err != nil {
			return err
		}
		from := cycle.State{Agent: a.State}
		if p != nil {
			from.Proposal = p.Status
		}
		if _, _, err := cycle.Next(from, cycle.Event{Kind: cycle.Rewind}); err != nil {
			return running(err, a, p)
		}
		if err := helpersIdle(tx, a); err != nil {
			return err
		}
		keep, err = tx.RecentBefores(id, s.ckpt.keepSteps())
		return err
	})
	if err != nil {
		return err
	}
	st, err := s.ckpt.storeOf(id)
	if err != nil {
		return err
	}
	st.Hold(ids(keep))
	if err := stillShown(ctx, st, a.Workspace, shown); err != nil {
		return err
	}
	walking()
	if rw.done, err = st.Restore(ctx, a.Workspace, checkpoint.ID(rw.target.Before)); err != nil {
		return fmt.Errorf("rewind: %w", err)
	}
	rw.id = randid.ID("rw-")
	return nil
}

// running is err, or when the cycle refused a rewind, why and what to do.
func running(err error, a *store.Agent, p *api.Proposal) error {
	var ill *cycle.IllegalError
	if !errors.As(err, &ill) || p == nil {
		return err
	}
	return conflict("agent %s is running step %d (%s): a rewind waits until it ends; try again then, or `agentctl stop %s` first", a.Name, p.Step, p.Command, a.Name)
}

// stillShown refuses a rewind unless the workspace is the one its dry run showed the
// change against (shown, a prefix of that checkpoint's root): the one check every front
// end's confirm passes, run under the runner's lock, so nothing the agent runs can
// change the workspace between it and the restore. A file written just before a capture
// is marked racy, which can give the same workspace another root: then what a diff shows
// is compared.
func stillShown(ctx context.Context, st *checkpoint.Store, ws, shown string) error {
	now, err := st.Checkpoint(ctx, ws)
	if err != nil {
		return fmt.Errorf("rewind: checkpointing the workspace to compare it with the one shown: %w", err)
	}
	if strings.HasPrefix(now.Root(), shown) {
		return nil
	}
	list, err := st.List(ctx)
	if err != nil {
		return err
	}
	changed := "the checkpoint it was shown against is gone"
	for i := len(list) - 1; i >= 0; i-- {
		if !strings.HasPrefix(list[i].Root(), shown) {
			continue
		}
		d, err := st.Diff(ctx, list[i].ID, now.ID)
		if err != nil {
			return err
		}
		if d.Files+d.Folders == 0 {
			return nil
		}
		changed = d.Summary() + " since"
		break
	}
	return conflict("the workspace changed since the rewind was shown (%s), so nothing was rewound; ask again", changed)
}
