package agent

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentd/agentd/api"
	"github.com/agentd/agentd/daemon/store"
	"github.com/agentd/agentd/internal/testutil"
)

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
