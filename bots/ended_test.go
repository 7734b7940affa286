package bots

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/agentd/agentd/api"
)

// endRun decides a-1's waiting proposal and ends its run r-0 as the daemon does: the agent
// goes idle (or failed) and the relay posts the run's end.
func (w *bindingWorld) endRun(how api.AgentState) {
	w.svc.mu.Lock()
	a := w.svc.find("a-1")
	a.Pending, a.State, a.RunID, a.StateReason = nil, how, "r-0", "done"
	c := *a
	w.svc.mu.Unlock()
	if how == api.StateFailed {
		w.r.posts.handle(context.Background(), api.Event{Type: api.EventState, AgentID: "a-1", Agent: &c})
	} else {
		w.r.posts.handle(context.Background(), api.Event{Type: api.EventFinish, AgentID: "a-1", Agent: &c, Message: "done"})
	}
}

// TestLateTextStartsNoTask: feedback written for the last proposal and delivered after
// the run ended starts no task, on the relay that showed the end and on one started
// afterwards (the end post is kept on the binding); a message written after the end
// starts one.
func TestLateTextStartsNoTask(t *testing.T) {
	for _, c := range []struct {
		name    string
		how     api.AgentState
		restart bool
	}{
		{"finished", api.StateIdle, false},
		{"failed", api.StateFailed, false},
		{"finished_then_restart", api.StateIdle, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			w := newBindingWorld(t)
			w.show(proposal("p-1", "a-1", 1, "read_file"))
			late := w.ad.stamp() // written while p-1 waited
			w.endRun(c.how)
			w.r.out.flush()
			if c.restart {
				w.r = New(Options{Service: w.svc, Bindings: w.binds})
				w.r.Add(w.ad, Rules{Channels: map[string]Access{"C1": {}}, Approvers: Access{Users: []string{"U1"}}})
			}
			w.say(late, "", "also look at the docs folder")
			if _, tasks := w.svc.record(); len(tasks) != 0 || w.lastNote() != "U1 "+lateText {
				t.Fatalf("late feedback started %q; note %q, want %q", tasks, w.lastNote(), lateText)
			}
			w.say(w.ad.stamp(), "", "now tidy the docs")
			if _, tasks := w.svc.record(); fmt.Sprint(tasks) != "[a-1 now tidy the docs]" {
				t.Errorf("tasks = %q, want the message written after the end", tasks)
			}
			b, _ := w.binds.BindingByThread(context.Background(), "slack", "C1", "T1")
			if b.EndPost != "" || b.EndRun != "" || b.RunID != "r-1" {
				t.Errorf("binding after the new task = %+v, want its new run and no end", b)
			}
		})
	}
}

// TestLateTextWaitsForTheEndInFlight: a message delivered while the post showing the run's
// end is on its way is judged against that post once it is known, not let through.
func TestLateTextWaitsForTheEndInFlight(t *testing.T) {
	for _, c := range []struct {
		name      string
		afterEnd  bool
		wantTasks int
	}{
		{"written_before_the_end", false, 0},
		{"written_after_the_end", true, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			w := newBindingWorld(t)
			w.show(proposal("p-1", "a-1", 1, "read_file"))
			before := w.ad.stamp()
			var wg sync.WaitGroup
			w.ad.onPost = func(string) {
				w.ad.onPost = nil
				id := before
				if c.afterEnd {
					id = w.ad.stamp()
				}
				wg.Add(1)
				go func() { defer wg.Done(); w.say(id, "", "also look at the docs folder") }()
			}
			w.endRun(api.StateIdle)
			w.r.out.flush()
			wg.Wait()
			if _, tasks := w.svc.record(); len(tasks) != c.wantTasks {
				t.Errorf("tasks = %q, want %d; note %q", tasks, c.wantTasks, w.lastNote())
			}
		})
	}
}
