package agent

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/agentd/agentd/api"
	"github.com/agentd/agentd/commands"
	"github.com/agentd/agentd/commands/shell"
	"github.com/agentd/agentd/daemon/config"
	"github.com/agentd/agentd/daemon/store"
	"github.com/agentd/agentd/internal/testutil"
)

// A +write allow pattern approves a line unasked, so it runs bounded: python finds no
// module the agent wrote beside the data. Its run ahead runs bounded too, so the change
// applied is the bounded run's (out.json), never one made by the agent's own code.
func TestAPatternApprovedLineAppliesOnlyWhatItsBoundedRunWrote(t *testing.T) {
	sh := realShellWith(t, shell.Options{})
	h := newHarness(t, func(o *Options) {
		o.Components = []commands.Component{commands.CommandList{ID: "shell", Cmds: commands.Set{sh}}}
		o.Allow = []string{"execute_shell(python3 -m json.tool *)+write"}
	})
	h.fake.Script(
		reply("execute_shell", map[string]string{"command_line": "python3 -m json.tool in.json out.json"}),
		reply("finish", map[string]string{"reason": "done"}),
	)
	a := h.createPlanted(hostileJSONWorkspace(false))
	h.waitFor(a.ID, "the finish proposal", func(a *api.Agent) bool { return a.Pending != nil && a.Pending.Command == "finish" })
	if b, err := os.ReadFile(filepath.Join(a.Workspace, "PWNED")); err == nil {
		t.Errorf("code the agent wrote ran under a +write pattern and its write landed unasked: PWNED=%q", b)
	}
	if b, err := os.ReadFile(filepath.Join(a.Workspace, "out.json")); err != nil || !strings.Contains(string(b), `"a": 1`) {
		t.Errorf("out.json = %q (%v): the pattern's approval did not write what the bounded run wrote", b, err)
	}
	eps := h.history(a.ID)
	if len(eps) != 1 || !strings.Contains(eps[0].Result, "was applied") {
		t.Errorf("history %+v, want the step with its bounded run ahead's change applied", eps)
	}
}

// A captured change is applied only under the profile its run ahead ran in: a person's
// preview under a pattern's bounded profile, or a bounded one under a person's approval,
// runs the command itself; a read-only bounded approval never applies a change.
func TestAPreviewIsAppliedOnlyUnderTheProfileItRanIn(t *testing.T) {
	person, bounded, boundedWrite := commands.Profile{}, commands.Profile{Bounded: true}, commands.Profile{Bounded: true, Write: true}
	for _, c := range []struct {
		name string
		ran  string
		prof commands.Profile
		want bool
	}{
		{"person_preview_person_approval", "", person, true},
		{"bounded_write_preview_bounded_write_approval", api.ProfileBoundedWrite, boundedWrite, true},
		{"person_preview_bounded_write_approval", "", boundedWrite, false},
		{"bounded_write_preview_person_approval", api.ProfileBoundedWrite, person, false},
		{"bounded_preview_bounded_approval", api.ProfileBounded, bounded, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := &api.Proposal{Preview: &api.Preview{Effect: &api.Effect{From: 1, To: 2, ToRoot: "ab", Profile: c.ran}}}
			if got := previewed(p, c.prof); got != c.want {
				t.Errorf("previewed(ran %q, approved %q) = %v, want %v", c.ran, profileName(c.prof), got, c.want)
			}
		})
	}
}

// A preview gone stale whose run again gives nothing to apply (here: past the disk
// budget) is asked again without the old diff, with the run's own reason; approving then
// runs the command, which the person was told.
func TestAStaleReaskShowsNoOldDiffAndSaysWhyNothingIsApplied(t *testing.T) {
	sh := realShellWith(t, shell.Options{})
	h := newHarness(t, func(o *Options) {
		o.Components = []commands.Component{commands.CommandList{ID: "shell", Cmds: commands.Set{sh}}}
		o.MaxDisk = config.Size(2 << 20)
	})
	ln := `if [ -e person.txt ]; then head -c 8388608 /dev/zero > big.bin; else echo harmless > a.txt; fi`
	h.fake.Script(reply("execute_shell", map[string]string{"command_line": ln}), reply("finish", map[string]string{"reason": "done"}))
	a := h.create(api.CreateAgentRequest{})
	p := h.pending(a.ID)
	if !strings.Contains(p.Preview.Diff, "+harmless") {
		t.Fatalf("first preview's diff:\n%s\nwant +harmless", p.Preview.Diff)
	}
	again := approvedAfterAChange(t, h, a, p)
	pv := again.Pending.Preview
	lines, diff := pv.Render()
	if diff != "" || pv.Diff != "" || pv.DiffCut {
		t.Errorf("asked again showing a diff:\n%s", diff)
	}
	if pv.Effect.Appliable() || !strings.Contains(pv.Effect.None, "disk") || !strings.Contains(again.StateReason, "disk") {
		t.Errorf("asked again with effect %+v, reason %q; want the run again's own reason (the disk)", pv.Effect, again.StateReason)
	}
	if !strings.Contains(strings.Join(lines, "\n"), "runs the command itself") {
		t.Errorf("asked again with\n%s\nwant that approving runs the command itself", strings.Join(lines, "\n"))
	}
}

// A decision names the change it was shown: once a stale preview is run again, a
// decision carrying the first message's reference is refused (look again), and one
// carrying the new reference is taken and applies the change it was shown.
func TestADecisionFromTheFirstPreviewIsRefusedOnceThePreviewRanAgain(t *testing.T) {
	h, a := previewHarness(t, `if [ -e person.txt ]; then echo EVIL > a.txt; else echo harmless > a.txt; fi`)
	p := h.pending(a.ID)
	shown := p.Ref()
	again := approvedAfterAChange(t, h, a, p)
	if again.Pending.Ref() == shown {
		t.Fatalf("the proposal's reference %s did not change with its preview", shown)
	}
	for _, ref := range []string{shown, shown[:minShownHash]} {
		req, _ := api.ParseDecision("y")
		req.ProposalID, req.Source, req.By, req.Hash = p.ID, "slack", "tester", ref
		_, err := h.sup.decisions.Decide(context.Background(), a.ID, req)
		if err == nil || !strings.Contains(err.Error(), "preview changed") || !strings.Contains(err.Error(), "look again") {
			t.Fatalf("a decision from the first preview (ref %s) got %v, want it refused: the preview changed, look again", ref, err)
		}
	}
	req, _ := api.ParseDecision("y")
	req.ProposalID, req.Source, req.By, req.Hash = p.ID, "slack", "tester", again.Pending.Ref()[:minShownHash]
	if _, err := h.sup.decisions.Decide(context.Background(), a.ID, req); err != nil {
		t.Fatalf("a decision on the preview shown now: %v", err)
	}
	h.waitFor(a.ID, "finish", func(a *api.Agent) bool { return a.Pending != nil && a.Pending.Command == "finish" })
	if b, _ := os.ReadFile(filepath.Join(a.Workspace, "a.txt")); string(b) != "EVIL\n" {
		t.Errorf("a.txt = %q, want the change the second preview showed", b)
	}
}

// approvedAfterAChange writes person.txt into a's workspace, approves p (whose preview
// is now stale) and returns a once it asks again.
func approvedAfterAChange(t *testing.T, h *harness, a *api.Agent, p *api.Proposal) *api.Agent {
	t.Helper()
	if err := os.WriteFile(filepath.Join(a.Workspace, "person.txt"), []byte("x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := h.decide(a.ID, p, "y"); err != nil {
		t.Fatal(err)
	}
	return h.waitFor(a.ID, "asked again", func(a *api.Agent) bool {
		return a.State == api.StateAwaitingDecision && a.Pending != nil && a.Pending.Status == api.ProposalInterrupted
	})
}

// A proposal a +write pattern would run ahead in its bounded profile, then left to a
// person (the watchdog caught a loop), is never shown that run's change: it runs ahead
// again in the person's profile, where the agent's own json package loads, and the
// person is asked on what that run changed. A decision on the proposal as shown before
// is refused (look again); approving applies the change the person's run ahead showed.
func TestProposalLeftToPersonShowsNoChangeRunAheadBounded(t *testing.T) {
	sh := realShellWith(t, shell.Options{})
	h := newHarness(t, func(o *Options) {
		o.Components = []commands.Component{commands.CommandList{ID: "shell", Cmds: commands.Set{sh}}}
		o.Allow = []string{"execute_shell(python3 -m json.tool *)+write", "execute_shell(rm *)+write"} // rm, json.tool, rm, json.tool: a loop
	})
	shownBounded := proposalsShownBounded(t, h)
	tool := reply("execute_shell", map[string]string{"command_line": "python3 -m json.tool in.json out.json"})
	rm := reply("execute_shell", map[string]string{"command_line": "rm -f out.json"})
	h.fake.Script(rm, tool, rm, tool, reply("finish", map[string]string{"reason": "done"}))
	a := h.createPlanted(hostileJSONWorkspace(true))
	ag := h.waitFor(a.ID, "a person asked on the preview run again", func(a *api.Agent) bool {
		return a.Pending != nil && a.Pending.Status == api.ProposalInterrupted
	})
	p := ag.Pending
	if p.Preview == nil || p.Preview.Effect == nil {
		t.Fatalf("the asked proposal %s %s has no effect preview", p.Command, p.Args)
	}
	if eff := p.Preview.Effect; !eff.Appliable() || eff.Profile != "" || !strings.Contains(p.Preview.Diff, "PWNED") {
		t.Fatalf("asked of a person with effect %+v, diff\n%s\nwant the run ahead in their profile, which loads the agent's json package (PWNED)", eff, p.Preview.Diff)
	}
	lines, _ := p.Preview.Render()
	if shown := strings.Join(lines, "\n"); !strings.Contains(shown, "approving applies this change") {
		t.Errorf("the person is shown:\n%s\nwant that approving applies the change run ahead in their profile", shown)
	}
	req, _ := api.ParseDecision("y")
	req.ProposalID, req.Source, req.By, req.Hash = p.ID, "slack", "tester", p.Hash[:minShownHash] // the proposal as first shown: no change to apply
	if _, err := h.sup.decisions.Decide(context.Background(), a.ID, req); err == nil || !strings.Contains(err.Error(), "look again") {
		t.Fatalf("a decision on the proposal as shown before its run ahead again got %v, want it refused: look again", err)
	}
	req.Hash = p.Ref()[:minShownHash]
	if _, err := h.sup.decisions.Decide(context.Background(), a.ID, req); err != nil {
		t.Fatal(err)
	}
	h.sup.runs.Resume(context.Background(), a.ID)
	h.waitFor(a.ID, "the approved step ran", func(x *api.Agent) bool { return len(h.history(a.ID)) >= p.Step })
	if got := shownBounded(p.ID); len(got) > 0 {
		t.Errorf("followers were shown the bounded run ahead's change as the person's to approve: %+v", got)
	}
	// Approving applied what the person's run ahead showed: the agent's code ran in their
	// profile, as the preview said, and the bounded run's out.json was not what landed.
	_, pwned := os.Stat(filepath.Join(a.Workspace, "PWNED"))
	if out, _ := os.ReadFile(filepath.Join(a.Workspace, "out.json")); pwned != nil || string(out) != "the agent wrote this" {
		t.Errorf("PWNED: %v, out.json = %q: the approved change is not the one the person's run ahead showed", pwned, out)
	}
	if eps := h.history(a.ID); !strings.Contains(eps[len(eps)-1].Result, "was applied") {
		t.Errorf("the approved step's result %q, want the change shown applied", eps[len(eps)-1].Result)
	}
}

// proposalsShownBounded follows h's agents from now on; the function it returns lists
// the effects shown with proposal id (in a proposal event or an agent's pending one)
// whose change was run ahead in a bounded profile: a person never approves those.
func proposalsShownBounded(t *testing.T, h *harness) func(id string) []api.Effect {
	followed := follow(t, h)
	return func(id string) []api.Effect {
		var out []api.Effect
		for _, e := range followed() {
			for _, p := range []*api.Proposal{e.Proposal, pendingOf(e.Agent)} {
				if p != nil && p.ID == id && p.Preview != nil && p.Preview.Effect.Appliable() && p.Preview.Effect.Profile != "" {
					out = append(out, *p.Preview.Effect)
				}
			}
		}
		return out
	}
}

func pendingOf(a *api.Agent) *api.Proposal {
	if a == nil {
		return nil
	}
	return a.Pending
}

// follow subscribes to h's agents' events from now on; the function it returns lists
// those published so far.
func follow(t *testing.T, h *harness) func() []api.Event {
	events, cancel, err := h.sup.agentViews.Subscribe("", 0)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var got []api.Event
	done := make(chan struct{})
	go func() {
		defer close(done)
		for e := range events {
			mu.Lock()
			got = append(got, e)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() { cancel(); <-done })
	return func() []api.Event {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(got)
	}
}

// hostileJSONWorkspace plants in.json beside a json package of the agent's (a cloned
// repo's) that writes PWNED when python3 -m json.tool loads it from the workspace, and
// whose own json.tool writes out.json; withOut plants out.json as the standard json.tool
// writes it too.
func hostileJSONWorkspace(withOut bool) func(ws string) error {
	return func(ws string) error {
		if err := os.MkdirAll(filepath.Join(ws, "json"), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(ws, "in.json"), []byte(`{"a":1}`), 0o644); err != nil {
			return err
		}
		if withOut {
			if err := os.WriteFile(filepath.Join(ws, "out.json"), []byte("{\n    \"a\": 1\n}\n"), 0o644); err != nil {
				return err
			}
		}
		if err := os.WriteFile(filepath.Join(ws, "json", "tool.py"), []byte("open('out.json','w').write('the agent wrote this')\n"), 0o644); err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(ws, "json", "__init__.py"), []byte("open('PWNED','w').write('agent code ran')\n"), 0o644)
	}
}

// The policy's verdict before a run ahead only picks its profile; the proposal's
// transaction decides. A pattern removed while the line ran ahead bounded leaves it to a
// person: it runs ahead again in their profile and they are asked on that, with the
// reason; approving applies the change their run ahead made, never the bounded one.
func TestAPatternRemovedDuringTheRunAheadAsksOnARunAheadInThePersonsProfile(t *testing.T) {
	h, a, fifo, shownBounded := leftToAPersonAfterABoundedRunAhead(t)
	feed(t, fifoWriter(t, fifo), "person\n") // its run ahead again, in the person's profile
	p := askedOnThePersonsRunAhead(t, h, a.ID)
	if _, err := h.decide(a.ID, p, "y"); err != nil {
		t.Fatal(err)
	}
	h.waitFor(a.ID, "the finish proposal", func(a *api.Agent) bool { return a.Pending != nil && a.Pending.Command == "finish" })
	if b, _ := os.ReadFile(filepath.Join(a.Workspace, "out.txt")); string(b) != "person\n" {
		t.Errorf("out.txt = %q, want the change the person's run ahead showed", b)
	}
	if got := shownBounded(p.ID); len(got) > 0 {
		t.Errorf("followers were shown the bounded run ahead's change as the person's to approve: %+v", got)
	}
}

// leftToAPersonAfterABoundedRunAhead makes an agent whose proposal, a line that waits on
// the fifo f in its folder, ran ahead in a +write pattern's bounded profile, and whose
// pattern went while it ran: the proposal is stored left to a person, and runs ahead
// again in their profile, waiting on fifo (in the copy) for what the test writes. The
// function returned lists the effects shown bounded (proposalsShownBounded).
func leftToAPersonAfterABoundedRunAhead(t *testing.T) (h *harness, a *api.Agent, fifo string, shownBounded func(id string) []api.Effect) {
	sh := realShellWith(t, shell.Options{})
	h = newHarness(t, func(o *Options) {
		o.Components = []commands.Component{commands.CommandList{ID: "shell", Cmds: commands.Set{sh}}}
	})
	h.fake.Script(reply("execute_shell", map[string]string{"command_line": "mkfifo -m 666 f; cat f > out.txt; rm f"}), reply("finish", map[string]string{"reason": "done"}))
	ctx := context.Background()
	allow := []string{"execute_shell(mkfifo *)+write", "execute_shell(cat *)+write", "execute_shell(rm *)+write"}
	// The patterns are there before the run starts, so its line runs ahead bounded.
	a = h.createPlanted(func(ws string) error {
		for _, pat := range allow {
			if _, err := h.sup.policyService.AddPermission(ctx, filepath.Base(ws), api.PermissionRequest{Effect: "allow", Pattern: pat, By: "tester"}); err != nil {
				return err
			}
		}
		return nil
	})
	shownBounded = proposalsShownBounded(t, h)
	// The run ahead waits on its fifo, in the copy, for what the test writes to it: the
	// pattern goes while it runs, weighed unasked.
	fifo = filepath.Join(filepath.Dir(a.Workspace), ".previews", a.ID, "f")
	w := fifoWriter(t, fifo)
	if _, err := h.sup.policyService.RemovePermission(ctx, a.ID, api.PermissionRequest{Effect: "allow", Pattern: allow[1], By: "tester"}); err != nil {
		t.Fatal(err)
	}
	feed(t, w, "bounded\n")
	h.waitFor(a.ID, "the proposal stored", func(a *api.Agent) bool { return a.Pending != nil })
	return h, a, fifo, shownBounded
}

// askedOnThePersonsRunAhead waits until agent id asks a person on its proposal's run
// ahead again in their profile, which read "person" from its fifo, and returns it.
func askedOnThePersonsRunAhead(t *testing.T, h *harness, id string) *api.Proposal {
	t.Helper()
	ag := h.waitFor(id, "a person asked on the run ahead again", func(a *api.Agent) bool {
		return a.State == api.StateAwaitingDecision && a.Pending != nil && a.Pending.Status == api.ProposalInterrupted
	})
	p := ag.Pending
	if eff := p.Preview.Effect; !eff.Appliable() || eff.Profile != "" || !strings.Contains(p.Preview.Diff, "+person") || !strings.Contains(ag.StateReason, "run again in yours: approving applies that change") {
		t.Fatalf("asked with effect %+v, reason %q, diff\n%s\nwant the person's run ahead (+person) and why", eff, ag.StateReason, p.Preview.Diff)
	}
	return p
}

// fifoWriter opens the fifo at path for writing once a reader has it open (a run
// ahead's cat).
func fifoWriter(t *testing.T, path string) *os.File {
	t.Helper()
	var f *os.File
	if !testutil.Wait(30*time.Second, func() bool {
		var err error
		f, err = os.OpenFile(path, os.O_WRONLY|syscall.O_NONBLOCK, 0)
		return err == nil
	}) {
		t.Fatalf("nothing read the fifo %s", path)
	}
	return f
}

// feed writes s to the fifo f and closes it: its reader reads s, then its end.
func feed(t *testing.T, f *os.File, s string) {
	t.Helper()
	defer f.Close()
	if _, err := f.WriteString(s); err != nil {
		t.Fatal(err)
	}
}

// While a proposal left to a person runs ahead again in their profile, it is shown with
// no change to apply and says so: a run ahead again is coming, and approving before it
// is in runs the command itself.
func TestAProposalWaitingForItsRunAheadAgainSaysWhatApprovingDoes(t *testing.T) {
	h, a, fifo, _ := leftToAPersonAfterABoundedRunAhead(t)
	w := fifoWriter(t, fifo) // its run ahead again has begun, and waits
	defer w.Close()
	p := storedProposal(t, h, a.ID)
	if !awaitsRerun(p) {
		t.Fatalf("stored during its run ahead again as %s with effect %+v, want it pending with the bounded preview dropped", p.Status, p.Preview.Effect)
	}
	lines, _ := p.Preview.Render()
	if shown := strings.Join(lines, "\n"); !strings.Contains(shown, "runs ahead again in yours") || !strings.Contains(shown, "approving before that run is in runs the command itself") {
		t.Errorf("shown while it runs ahead again:\n%s\nwant that a run ahead in the person's profile is coming, and that approving now runs the command itself", shown)
	}
}

// A pause while the proposal runs ahead again cuts that run short and leaves the
// proposal waiting for it; the resume runs it ahead again and the person is asked on
// what it gives, never on the cut run.
func TestAPauseDuringTheRunAheadAgainRunsItAgainOnResume(t *testing.T) {
	h, a, fifo, _ := leftToAPersonAfterABoundedRunAhead(t)
	w := fifoWriter(t, fifo)
	ctx := context.Background()
	if _, err := h.sup.runs.Pause(ctx, a.ID); err != nil {
		t.Fatal(err)
	}
	w.Close() // the cut run ahead reads nothing
	if !testutil.Wait(30*time.Second, func() bool { return !fifoRead(fifo) }) {
		t.Fatal("the run ahead again still reads its fifo after the pause")
	}
	if p := storedProposal(t, h, a.ID); p.Status != api.ProposalPending && p.Status != api.ProposalInterrupted {
		t.Fatalf("the proposal is %s after a pause during its run ahead again, want it still open", p.Status)
	}
	if _, err := h.sup.runs.Resume(ctx, a.ID); err != nil {
		t.Fatal(err)
	}
	feed(t, fifoWriter(t, fifo), "person\n") // its run ahead again after the resume
	askedOnThePersonsRunAhead(t, h, a.ID)
}

// A daemon stopping while the proposal runs ahead again leaves it waiting for that run,
// as stored; the restarted daemon runs it ahead again and asks the person on it.
func TestARestartDuringTheRunAheadAgainRunsItAgain(t *testing.T) {
	h, a, fifo, _ := leftToAPersonAfterABoundedRunAhead(t)
	w := fifoWriter(t, fifo)
	h.stop()
	w.Close()
	if p := storedProposal(t, h, a.ID); !awaitsRerun(p) {
		t.Fatalf("stored after the daemon stopped during its run ahead again as %s with effect %+v, want it still waiting for that run", p.Status, p.Preview.Effect)
	}
	h.start()
	feed(t, fifoWriter(t, fifo), "person\n") // its run ahead again after the restart
	askedOnThePersonsRunAhead(t, h, a.ID)
}

// A click while the proposal runs ahead again does what it was shown to do: the command
// itself runs, in the person's profile, and the run ahead again, once in, moves nothing.
func TestAClickWhileThePreviewRunsAgainRunsTheCommandAsShown(t *testing.T) {
	h, a, fifo, _ := leftToAPersonAfterABoundedRunAhead(t)
	w := fifoWriter(t, fifo)
	p := storedProposal(t, h, a.ID)
	if _, err := h.decide(a.ID, p, "y"); err != nil {
		t.Fatalf("a click on the proposal as shown while it runs ahead again: %v", err)
	}
	feed(t, w, "ahead\n")
	feed(t, fifoWriter(t, filepath.Join(a.Workspace, "f")), "clicked\n") // the command itself, in the workspace
	h.waitFor(a.ID, "the finish proposal", func(a *api.Agent) bool { return a.Pending != nil && a.Pending.Command == "finish" })
	if b, _ := os.ReadFile(filepath.Join(a.Workspace, "out.txt")); string(b) != "clicked\n" {
		t.Errorf("out.txt = %q, want what the command itself read when it ran on the click", b)
	}
	eps := h.history(a.ID)
	if last := eps[len(eps)-1]; last.ProposalID != p.ID || strings.Contains(last.Result, "was applied") {
		t.Errorf("the clicked step's episode is %+v, want the command itself run, no previewed change applied", last)
	}
}

// fifoRead reports whether something has the fifo at path open for reading.
func fifoRead(path string) bool {
	f, err := os.OpenFile(path, os.O_WRONLY|syscall.O_NONBLOCK, 0)
	if err == nil {
		f.Close()
	}
	return err == nil
}

// storedProposal reads agent id's open proposal from the store.
func storedProposal(t *testing.T, h *harness, id string) *api.Proposal {
	t.Helper()
	var p *api.Proposal
	if err := h.st.View(context.Background(), func(tx *store.Tx) (err error) {
		p, err = tx.OpenProposal(id)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	return p
}
