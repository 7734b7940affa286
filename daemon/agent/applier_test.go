package agent

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentd/agentd/api"
	"github.com/agentd/agentd/daemon/agent/cycle"
	"github.com/agentd/agentd/daemon/checkpoint"
	"github.com/agentd/agentd/daemon/store"
)

// The table is what runs: every legal (state, event) pair of the cycle's golden table goes
// through the applier against the real store, with every input an effect could use, and
// what it wrote — read back from the store and from recorders of the episodes, the
// decisions counted and the cancels — is exactly the effects the table lists; what it
// published, nothing before the commit, is exactly the events those effects make.
func TestApplierDoesWhatTheTableSays(t *testing.T) {
	st, err := store.Open(context.Background(), filepath.Join(t.TempDir(), "agentd.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	ck := &checkpoints{opt: CheckpointOptions{Dir: t.TempDir()}}
	t.Cleanup(ck.closeAll)
	n := 0
	for _, as := range cycle.AgentStates {
		for _, ps := range cycle.OpenStatuses {
			for _, ev := range cycle.Events() {
				from := cycle.State{Agent: as, Proposal: ps}
				_, effects, err := cycle.Next(from, ev)
				if err != nil {
					continue
				}
				n++
				want := make([]string, len(effects))
				for i, e := range effects {
					want[i] = effectName(e)
				}
				slices.Sort(want)
				got, published := applyRecorded(t, st, ck, n, from, ev)
				if !slices.Equal(got, want) {
					t.Errorf("%s + %s (writes %v, unchecked %v): the applier did %v, the table lists %v", from, ev.Kind, ev.Writes, ev.Unchecked, got, want)
				}
				if wantEvents := eventsFollowing(effects); !slices.Equal(published, wantEvents) {
					t.Errorf("%s + %s: the applier published %v once it committed, the table's effects make %v", from, ev.Kind, published, wantEvents)
				}
			}
		}
	}
	if n < 100 {
		t.Fatalf("only %d legal pairs: the table shrank or the loop above lost its way", n)
	}
}

// effectName names an effect as the applier's observable write: its kind, and for a
// cancel what it cancels.
func effectName(e cycle.Effect) string {
	if e.Kind == cycle.Cancel {
		return e.String()
	}
	return string(e.Kind)
}

// eventsFollowing are the events a follower sees for effects, in the order it reads them:
// an error reported, the proposal shown (with the agent: no state event beside it), the
// decision recorded, the result remembered (or a rewind's), the agent's new state (or the
// agent shown as it is), the question asked, its run's end, its removal.
func eventsFollowing(effects []cycle.Effect) []api.EventType {
	var out []api.EventType
	for _, t := range []struct {
		effect cycle.EffectKind
		event  api.EventType
	}{{cycle.ReportError, api.EventError}, {cycle.ShowProposal, api.EventProposal}, {cycle.RecordDecision, api.EventDecision}, {cycle.RecordEpisode, api.EventResult},
		{cycle.SetAgent, api.EventState}, {cycle.ShowAgent, api.EventState}, {cycle.AskPerson, api.EventQuestion}, {cycle.EndRun, api.EventFinish}, {cycle.ShowRemoved, api.EventRemoved}} {
		if (has(effects, t.effect) || t.event == api.EventResult && has(effects, cycle.Restore)) && (t.event != api.EventState || !has(effects, cycle.ShowProposal)) {
			out = append(out, t.event)
		}
	}
	return out
}

// effectRecorder records the episodes remembered, decisions counted and cancels made.
type effectRecorder struct {
	episodes, decisions, stepCancels, execCancels int
}

func (e *effectRecorder) recordEpisode(*store.Tx, string, *api.Proposal, *api.Episode) error {
	e.episodes++
	return nil
}

func (e *effectRecorder) countDecision(*store.Tx, *api.Decision) { e.decisions++ }

// decisionKinds are the events a decision makes, and the decision each records.
var decisionKinds = map[cycle.Kind]api.DecisionKind{
	cycle.PolicyAllow: api.DecisionApprove, cycle.PolicyRefuse: api.DecisionFeedback,
	cycle.Approve: api.DecisionApprove, cycle.ApproveN: api.DecisionApprove,
	cycle.Deny: api.DecisionDeny, cycle.GiveFeedback: api.DecisionFeedback,
}

// applyRecorded stores agent n in from (on another run than its proposal's for RunOver),
// with a run and a count grant, applies k to it with every input an effect could use in
// one transaction, and returns the effects it observed, sorted.
func applyRecorded(t *testing.T, st *store.Store, ck *checkpoints, n int, from cycle.State, event cycle.Event) (effects []string, published []api.EventType) {
	t.Helper()
	ctx := context.Background()
	k := event.Kind
	rec := &effectRecorder{}
	r := &runner{cancelStep: func() { rec.stepCancels++ }, cancelExec: func() { rec.execCancels++ }}
	id, run := fmt.Sprintf("a-%04d", n), fmt.Sprintf("r-%04d", n)
	a := &store.Agent{Agent: api.Agent{ID: id, Name: fmt.Sprintf("t%04d", n), State: from.Agent, StateReason: "before",
		RunID: run, Task: "a task", Policy: api.Policy{Mode: "ask"}, Workspace: t.TempDir(), Unchecked: event.Mark}}
	ws := filepath.Join(a.Workspace, "f")
	writeFile(t, ws, "before")
	var target checkpoint.Info // what a rewind puts back, and a started step's checkpoint
	if event.Writes || k == cycle.Rewind {
		var err error
		if target, err = ck.take(a, nil); err != nil {
			t.Fatal(err)
		}
	}
	writeFile(t, ws, "after")
	// What the callers do outside the transaction: the checkpoints of a step's start and
	// end, and a rewind's restore, which the applier records.
	rw := &rewindTo{target: &store.StepCheckpoint{Step: 1, Before: uint64(target.ID)}, by: "tester", id: "rw-" + id}
	if event.Writes || k == cycle.Rewind {
		now, err := ck.take(a, nil)
		if err != nil {
			t.Fatal(err)
		}
		s, _ := ck.storeOf(id)
		d, err := s.Diff(ctx, target.ID, now.ID)
		if err != nil {
			t.Fatal(err)
		}
		ck.taken = map[aheadKey]takenAhead{{id, false}: {proposal: "p-" + id, info: target}, {id, true}: {proposal: "p-" + id, info: now, diff: d}}
		if k == cycle.Rewind {
			if rw.done, err = s.Restore(ctx, a.Workspace, target.ID); err != nil {
				t.Fatal(err)
			}
		}
	}
	if from.Agent == cycle.RunOver {
		a.State, a.RunID = cycle.Idle, run+"-next"
	}
	g := &api.Grant{ID: "g-" + id, AgentID: id, Kind: api.GrantCount, Count: 5, RunID: run, Label: "y -5"}
	var p *api.Proposal
	if from.Proposal != cycle.None || isProposed(k) || k == cycle.LateEnd {
		p = &api.Proposal{ID: "p-" + id, AgentID: id, RunID: run, Command: "read_file", Args: []byte(`{}`), Hash: "h" + id, Status: from.Proposal,
			Preview: &api.Preview{Kind: api.PreviewProgram, Effect: &api.Effect{Output: "ran ahead", Summary: "changes 1 file (+1 −0)", From: 1, To: 3}}}
	}
	var got []string
	var showedState bool               // what the applier tells a mutation that publishes the state itself otherwise
	var shownUnchanged, stateKept bool // what the state event says, and what the store shows
	err := st.Tx(ctx, func(tx *store.Tx) error {
		got = nil
		if err := seed(tx, a, run, g, p); err != nil {
			return err
		}
		if k == cycle.LateEnd { // withdrawn while its command ran: stored, no longer open
			withdrawn := *p
			withdrawn.Status = api.ProposalFailed
			if err := tx.InsertProposal(&withdrawn); err != nil {
				return err
			}
		}
		if p != nil && event.Writes && k != cycle.Start && k != cycle.StartApply { // a started step's checkpoint, for its end to record
			if err := tx.InsertStepCheckpoint(&store.StepCheckpoint{ID: p.ID, AgentID: id, RunID: run, Kind: store.CheckpointStep, Before: uint64(target.ID)}); err != nil {
				return err
			}
		}
		published = nil
		c := &change{a: a, p: p, ev: cycle.Event{Kind: k, Reason: "after", Result: "result", Detail: "detail", Writes: event.Writes, Unchecked: event.Unchecked},
			rec: rec.recordEpisode, count: rec.countDecision, cancel: r.cancel, ckpt: ck, rewind: rw,
			exhausted: &exhausted{BudgetExhausted: api.BudgetExhausted{Scope: api.BudgetScopeRun, Kind: "steps", RunID: run}, why: "why"},
			pub: func(ev api.Event) api.Event {
				published = append(published, ev.Type)
				if ev.Type == api.EventState {
					shownUnchanged = ev.Unchanged
				}
				if d := ev.Decided; ev.Type == api.EventDecision && (d == nil || d.ID != p.ID || d.Status != from.Proposal) {
					t.Errorf("%s + %s: the decision event shows proposal %+v; want %s as it was asked", from, k, d, p.ID)
				}
				return ev
			}}
		if k == cycle.AgentBudgetHit {
			c.exhausted.Scope = api.BudgetScopeAgent
		}
		if from.Agent == cycle.RunOver {
			c.a = nil
		} else {
			c.owner = a
		}
		if k == cycle.Task {
			a.RunID, a.Task = run+"-task", "the next task" // as newRunTx sets them
		}
		if p != nil {
			c.decision = &api.Decision{ProposalID: p.ID, Kind: decisionKinds[k], By: "tester", Source: "api"}
			c.auth = &cycle.Authorization{Grant: g}
			if k == cycle.Approve || k == cycle.ApproveN {
				c.auth = &cycle.Authorization{NewGrant: &api.Grant{Kind: api.GrantExact, Command: p.Command, Hash: p.Hash, Label: "y!"}}
			}
			if _, ok := decisionKinds[k]; !ok {
				c.episode = episodeOf(p, "succeeded", "result", "")
			}
		}
		before, err := observe(tx, id, run, g.ID, p)
		if err != nil {
			return err
		}
		state, reason, mark, shownReason := a.State, a.StateReason, a.Unchecked, a.ShownReason()
		if _, err := apply(tx, c); err != nil {
			return err
		}
		showedState = c.showedState
		if len(published) > 0 {
			t.Errorf("%s + %s: the applier published %v before its transaction committed", from, k, published)
		}
		after, err := observe(tx, id, run, g.ID, p)
		if err != nil {
			return err
		}
		got = before.diff(after)
		stateKept = c.a != nil && a.State == state && a.ShownReason() == shownReason
		if c.a != nil && (a.State != state || a.StateReason != reason) {
			got = append(got, string(cycle.SetAgent))
		}
		if c.a != nil && a.Unchecked != mark { // the caller writes it, with the agent
			got = append(got, string(cycle.MarkUnchecked))
		}
		if rec.episodes > 0 && k != cycle.Rewind { // a rewind's episode is its restore's
			got = append(got, string(cycle.RecordEpisode))
		}
		return nil
	})
	if err != nil {
		t.Fatalf("%s + %s: %v", from, k, err)
	}
	if showedState != slices.Contains(published, api.EventState) {
		t.Errorf("%s + %s: the applier says it showed the state %v, but published %v", from, k, showedState, published)
	}
	if showedState && shownUnchanged != stateKept {
		t.Errorf("%s + %s: the state event says unchanged %v, but the state and reason shown were kept %v", from, k, shownUnchanged, stateKept)
	}
	if slices.Contains(published, api.EventProposal) { // showing is all show_proposal does
		got = append(got, string(cycle.ShowProposal))
	}
	if slices.Contains(published, api.EventState) && !slices.Contains(got, string(cycle.SetAgent)) { // the agent shown, its state unchanged
		got = append(got, string(cycle.ShowAgent))
	}
	if slices.Contains(published, api.EventError) { // reporting is all report_error does
		got = append(got, string(cycle.ReportError))
	}
	if slices.Contains(published, api.EventRemoved) { // telling is all show_removed does
		got = append(got, string(cycle.ShowRemoved))
	}
	switch {
	case rec.execCancels > 0:
		got = append(got, effectName(cycle.Effect{Kind: cycle.Cancel, Command: true}))
	case rec.stepCancels > 0:
		got = append(got, effectName(cycle.Effect{Kind: cycle.Cancel}))
	}
	if counted := rec.decisions > 0; counted != slices.Contains(got, string(cycle.RecordDecision)) {
		t.Errorf("%s + %s: a decision was counted %v, recorded %v: the metrics and the store disagree", from, k, counted, !counted)
	}
	slices.Sort(got)
	return got, published
}

func isProposed(k cycle.Kind) bool {
	return k == cycle.Proposed || k == cycle.ProposedRepeat || k == cycle.ProposedRethink || k == cycle.ProposedLoop
}

// seed stores a, its run (and the one it moved on to, for a proposal of an old run), the
// count grant g and p, unless p is the model's new proposal, which the event stores.
func seed(tx *store.Tx, a *store.Agent, run string, g *api.Grant, p *api.Proposal) error {
	if err := tx.InsertAgent(a); err != nil {
		return err
	}
	if err := tx.StartRun(run, a.ID, a.Task); err != nil {
		return err
	}
	if a.RunID != run {
		if err := tx.StartRun(a.RunID, a.ID, a.Task); err != nil {
			return err
		}
	}
	if err := tx.InsertGrant(g); err != nil {
		return err
	}
	if p != nil && p.Status != cycle.None {
		return tx.InsertProposal(p)
	}
	return nil
}

// observed is what the store holds of an agent's cycle: what the applier's store
// effects change.
type observed struct {
	proposal     api.ProposalStatus // "" when not stored
	runOutcome   api.RunOutcome
	runs         int // the agent's runs
	grantUsed    int
	grantRevoked bool
	grants       int
	decided      bool
	budgetAudits int    // audit entries of a budget that ran out
	applied      int    // apply_preview audit entries
	previewNone  string // why the stored preview's change is no longer appliable
	previewNote  string // what the person asked should know
	// checkpointed and changeRecorded: the step's checkpoint row, before and after;
	// rewound: the rewind's row, which records the restore done before the transaction.
	checkpointed, changeRecorded, rewound bool
	asked                                 bool // a question waits for its answer
}

func observe(tx *store.Tx, agentID, run, grantID string, p *api.Proposal) (observed, error) {
	var o observed
	if c, err := tx.StepCheckpointOf("rw-" + agentID); err == nil {
		o.rewound = c.Kind == store.CheckpointRewind
	}
	if _, err := tx.Question(agentID); err == nil {
		o.asked = true
	}
	if p != nil {
		if c, err := tx.StepCheckpointOf(p.ID); err == nil {
			o.checkpointed, o.changeRecorded = c.Before != 0, c.After != 0
		}
		if q, err := tx.Proposal(p.ID); err == nil {
			o.proposal = q.Status
			if q.Preview != nil {
				o.previewNote = q.Preview.Note
			}
			if q.Preview != nil && q.Preview.Effect != nil {
				o.previewNone = q.Preview.Effect.None
			}
		}
		es, err := tx.AuditEntries(store.AuditFilter{AgentID: agentID, Kind: "apply_preview"})
		if err != nil {
			return o, err
		}
		o.applied = len(es)
		_, err = tx.LastDecision(p.ID)
		o.decided = err == nil
	}
	r, err := tx.Run(run)
	if err != nil {
		return o, err
	}
	o.runOutcome = r.Outcome
	runs, err := tx.Runs(agentID, 100)
	if err != nil {
		return o, err
	}
	o.runs = len(runs)
	g, err := tx.Grant(agentID, grantID)
	if err != nil {
		return o, err
	}
	o.grantUsed, o.grantRevoked = g.Used, g.RevokedAt != nil
	gs, err := tx.Grants(agentID)
	o.grants = len(gs)
	if err != nil {
		return o, err
	}
	for _, kind := range []string{"agent_budget_exhausted", string(api.RunBudgetExhausted)} {
		entries, err := tx.AuditEntries(store.AuditFilter{AgentID: agentID, Kind: kind})
		if err != nil {
			return o, err
		}
		o.budgetAudits += len(entries)
	}
	return o, nil
}

// diff names the store effects that tell o from after.
func (o observed) diff(after observed) []string {
	var out []string
	for _, d := range []struct {
		changed bool
		effect  cycle.EffectKind
	}{
		{o.proposal != after.proposal, cycle.SetProposal},
		{o.runOutcome != after.runOutcome, cycle.EndRun},
		{o.runs != after.runs, cycle.StartRun},
		{o.grantUsed != after.grantUsed || o.grants != after.grants, cycle.Grant},
		{!o.grantRevoked && after.grantRevoked, cycle.EndGrant},
		{!o.decided && after.decided, cycle.RecordDecision},
		{o.budgetAudits != after.budgetAudits, cycle.RecordBudget},
		{o.applied != after.applied, cycle.ApplyPreview},
		{o.previewNone != after.previewNone, cycle.DropPreview},
		{o.previewNote != after.previewNote, cycle.NoteUnchecked},
		{!o.checkpointed && after.checkpointed, cycle.Checkpoint},
		{!o.changeRecorded && after.changeRecorded, cycle.RecordChange},
		{!o.rewound && after.rewound, cycle.Restore},
		{!o.asked && after.asked, cycle.AskPerson},
	} {
		if d.changed {
			out = append(out, string(d.effect))
		}
	}
	return out
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// Only transit writes an agent's state or a proposal's status: every other change goes
// through cycle.Next. (A new agent's record starts at cycle.Initial.)
func TestOnlyTransitWritesState(t *testing.T) {
	writes := regexp.MustCompile(`SetProposalStatus\(|InsertProposal\(|\b[a-z]+\.Status = |\.State(, [^=]*)? = |StateReason(, [^=]*)? = |State: api\.State`)
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") || f == "transit.go" {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for i, line := range strings.Split(string(b), "\n") {
			if strings.Contains(line, "step.State = ") || strings.Contains(line, "c.Status = api.Check") {
				continue // a command step's key-value state; a doctor check's status
			}
			if writes.MatchString(line) {
				t.Errorf("%s:%d writes an agent's state or a proposal's status outside transit: go through cycle.Next (transit)\n\t%s", f, i+1, strings.TrimSpace(line))
			}
		}
	}
}

// The loop chooses nothing of its own: the runner's files build no event from a kind they
// name (every event they apply is cycle.NextMove's answer), and its loop handles every
// move NextMove can make.
func TestLoopDoesWhatNextMoveSays(t *testing.T) {
	own := regexp.MustCompile(`Kind: cycle\.[A-Z][A-Za-z]*\s*[,}]`) // a kind constant, not NextMove(...)
	for _, f := range []string{"runner.go", "round.go"} {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for i, line := range strings.Split(string(b), "\n") {
			if own.MatchString(line) {
				t.Errorf("%s:%d chooses an event of its own: take it from cycle.NextMove\n\t%s", f, i+1, strings.TrimSpace(line))
			}
		}
	}
	b, err := os.ReadFile("round.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, then := range cycle.Thens {
		name := map[cycle.Then]string{cycle.EndLoop: "EndLoop", cycle.Wait: "Wait", cycle.Again: "Again", cycle.AskModel: "AskModel", cycle.Weigh: "Weigh", cycle.RunIt: "RunIt", cycle.RunAhead: "RunAhead"}[then]
		if name == "" || !strings.Contains(string(b), fmt.Sprintf("cycle.%s", name)) {
			t.Errorf("the loop in round.go does not handle NextMove's %q", then)
		}
	}
}

// A proposal the policy leaves to a person is followed by the agent's state as it is
// then: waiting, with the proposal pending. A front end that follows the events (agentctl
// run, follow) asks the person on it; an event showing the agent as it was before would
// keep it spinning on "thinking".
func TestProposalLeftToAPersonShowsTheAgentWaiting(t *testing.T) {
	h := newHarness(t)
	events, cancel, err := h.sup.agentViews.Subscribe("", 0)
	if err != nil {
		t.Fatal(err)
	}
	defer cancel()
	h.fake.Script(reply("write_file", map[string]string{"path": "a.txt", "contents": "a\n"}))
	a := h.create(api.CreateAgentRequest{})
	deadline := time.After(30 * time.Second)
	for {
		select {
		case e := <-events:
			if e.AgentID != a.ID || e.Agent == nil || e.Type == api.EventProposal {
				continue
			}
			if e.Agent.Pending != nil {
				if e.Agent.State != api.StateAwaitingDecision {
					t.Fatalf("%s event with the proposal pending shows the agent %s; want awaiting_decision", e.Type, e.Agent.State)
				}
				return
			}
		case <-deadline:
			t.Fatal("no event showed the agent with its proposal pending")
		}
	}
}
