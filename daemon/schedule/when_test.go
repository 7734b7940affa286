package schedule

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentd/agentd/api"
	"github.com/agentd/agentd/commands/shell"
	"github.com/agentd/agentd/daemon/agent"
	"github.com/agentd/agentd/daemon/schedule/wake"
	"github.com/agentd/agentd/daemon/store"
	"github.com/agentd/agentd/internal/shelltest"
	"github.com/agentd/agentd/internal/testutil"
)

// recordingChat is a chat that serves every channel and keeps what is posted.
type recordingChat struct {
	mu    sync.Mutex
	posts []string
}

func (c *recordingChat) CheckChannel(platform, channel string) error { return nil }
func (c *recordingChat) StartRunThread(ctx context.Context, platform, channel, header, details string) (string, error) {
	c.post(header)
	return "t1", nil
}
func (c *recordingChat) BindRun(ctx context.Context, platform, channel, thread, agentID, runID, by string) error {
	return nil
}
func (c *recordingChat) Note(ctx context.Context, platform, channel, thread, text string) error {
	c.post(text)
	return nil
}
func (c *recordingChat) RunThread(_ context.Context, platform, runID string) (string, string, bool) {
	return "", "", false
}

func (c *recordingChat) post(s string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.posts = append(c.posts, s)
}

func (c *recordingChat) all() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.posts...)
}

// withWake makes the harness's Managers check wake conditions with an engine over its
// store (its checkpoints in the harness's folder, kept across restarts), and deliver to
// a recording chat.
func (h *harness) withWake(sh shell.Checker) *recordingChat {
	chat := &recordingChat{}
	h.chat = chat
	h.wake = func() Wake {
		e, err := wake.New(wake.Options{Store: h.st, Dir: filepath.Join(h.dir, "wake")})
		if err != nil {
			h.t.Fatal(err)
		}
		return Wake{Engine: e, Shell: sh}
	}
	h.stopManager()
	h.startManager()
	return chat
}

// watcher creates an idle agent with a notes folder in its workspace and returns the
// workspace.
func (h *harness) watcher(name string) string {
	h.t.Helper()
	ctx := context.Background()
	a, err := api.CreateAgentRoute.Do(ctx, h.c, "", api.CreateAgentRequest{Name: name, Description: "watches notes", Start: new(bool)})
	if err != nil {
		h.t.Fatal(err)
	}
	writeFile(h.t, filepath.Join(a.Workspace, "notes", "a.txt"), "one\n")
	return a.Workspace
}

// newWatching is a harness at 12:00 with wake checks on, a model that finishes at once
// and the agent "watcher"; it returns the chat the schedules post to and the agent's
// workspace.
func newWatching(t testing.TB) (*harness, *recordingChat, string) {
	t.Helper()
	h := newHarness(t, at(12, 0))
	chat := h.withWake(nil)
	h.finishAtOnce()
	return h, chat, h.watcher("watcher")
}

func writeFile(t testing.TB, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// chatCalls counts the model calls the fake Ollama answered.
func (h *harness) chatCalls() int { return len(h.fake.Requests()) }

// A schedule whose folder does not change records nothing_to_do with the reason, calls
// no model and posts nothing to its chat; a change wakes it, and the run's first prompt
// says what changed; a restart keeps what the last run saw.
func TestQuietScheduleCostsNoModelCallUntilItsFolderChanges(t *testing.T) {
	h, chat, ws := newWatching(t)
	ctx := context.Background()
	s := h.add(api.ScheduleRequest{Name: "notes", Spec: "* * * * *", Agent: "watcher", Goal: "summarize the notes", Autonomy: api.Autonomy{Mode: "auto", Steps: 1},
		Delivery: "slack:C1", When: &api.WakeConditions{Changed: []string{"notes"}}})
	if s.When == nil || len(s.When.Changed) != 1 || s.When.OnFailure != "skip" || s.When.FailAfter != 3 {
		t.Fatalf("added schedule's conditions = %+v, want notes with the defaults", s.When)
	}

	// The first firing has nothing to compare with: it wakes once.
	h.clock.Set(at(12, 1))
	h.waitHistory("notes", "the first look", func(r []api.ScheduleRun) bool { return outcomes(r) == "finished" })
	calls := h.chatCalls()
	if calls == 0 {
		t.Fatal("the first firing made no model call")
	}
	// The run's end is posted off the firing path: wait for it before counting posts.
	if !testutil.Wait(10*time.Second, func() bool { return strings.Contains(strings.Join(chat.all(), "\n"), "finished") }) {
		t.Fatalf("the first run's end was not posted: %q", chat.all())
	}
	posts := len(chat.all())

	for i, m := range []int{2, 3, 4} {
		h.clock.Set(at(12, m))
		h.waitHistory("notes", "a quiet firing", func(r []api.ScheduleRun) bool { return len(r) == i+2 })
	}
	runs, _ := api.ScheduleHistoryRoute.Do(ctx, h.c, "notes", api.ScheduleHistoryQuery{Limit: 0})
	if got := outcomes(runs); got != "finished nothing_to_do nothing_to_do nothing_to_do" {
		t.Fatalf("outcomes = %s", got)
	}
	if !strings.Contains(runs[0].Reason, "nothing to do") || !strings.Contains(runs[0].Reason, "notes") || runs[0].AgentID != "" {
		t.Errorf("a quiet firing's record = %+v, want the reason naming the folder and no agent", runs[0])
	}
	if got := h.chatCalls(); got != calls {
		t.Errorf("quiet firings made %d model calls", got-calls)
	}
	if got := chat.all(); len(got) != posts {
		t.Errorf("quiet firings posted to chat: %q", got[posts:])
	}

	// The daemon restarts: the state survives, the next quiet firing is still quiet.
	h.stopManager()
	h.startManager()
	h.clock.Set(at(12, 5))
	h.waitHistory("notes", "a quiet firing after a restart", func(r []api.ScheduleRun) bool {
		return len(r) == 5 && r[0].Outcome == api.RunNothingToDo
	})

	writeFile(t, filepath.Join(ws, "notes", "a.txt"), "one\ntwo\n")
	h.clock.Set(at(12, 6))
	h.waitHistory("notes", "the woken run", func(r []api.ScheduleRun) bool { return len(r) == 6 && r[0].Outcome == api.RunFinished })
	reqs := h.fake.Requests()
	if len(reqs) == calls {
		t.Fatal("the change woke no model call")
	}
	first := reqs[calls]
	var prompt strings.Builder
	for _, msg := range first.Messages {
		prompt.WriteString(msg.Content)
	}
	if !strings.Contains(prompt.String(), "modified") || !strings.Contains(prompt.String(), "notes/a.txt") {
		t.Errorf("the woken run's first prompt does not say what changed:\n%s", prompt.String())
	}
	// What the check found is the run's first step, not part of its task.
	var eps []api.Episode
	var task string
	if err := h.st.View(ctx, func(tx *store.Tx) (err error) {
		a, err := tx.AgentByName("watcher")
		if err != nil {
			return err
		}
		task = a.Task
		eps, err = tx.Episodes(a.ID, 0)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	var check []api.Episode
	for _, ep := range eps {
		if ep.Command == agent.CheckCommand {
			check = append(check, ep)
		}
	}
	if task != "summarize the notes" || len(check) == 0 || check[len(check)-1].Step != 0 || !strings.Contains(check[len(check)-1].Result, "notes/a.txt") {
		t.Errorf("woken run: task %q, check steps %+v; want the goal alone and a step 0 naming notes/a.txt", task, check)
	}
}

// A check that keeps failing (its folder swapped for a link out of the workspace) is recorded as check_failed each time, and the
// fail_after-th in a row is surfaced: in schedule show, doctor and, once, the schedule's chat.
func TestFailingCheckSurfacesAfterFailAfterInARow(t *testing.T) {
	h, chat, ws := newWatching(t)
	ctx := context.Background()
	h.add(api.ScheduleRequest{Name: "notes", Spec: "* * * * *", Agent: "watcher", Goal: "summarize",
		Delivery: "slack:C1", When: &api.WakeConditions{Changed: []string{"notes"}, FailAfter: 2}})
	// A link leading out swapped in for the folder: each check resolves the path anew
	// and refuses it.
	if err := os.RemoveAll(filepath.Join(ws, "notes")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/etc", filepath.Join(ws, "notes")); err != nil {
		t.Fatal(err)
	}
	h.clock.Set(at(12, 1))
	h.waitHistory("notes", "the first failed check", func(r []api.ScheduleRun) bool { return outcomes(r) == "check_failed" })
	if s, _ := api.ScheduleRoute.Do(ctx, h.c, "notes", api.None{}); s.Wake == nil || s.Wake.Failures != 1 || s.Wake.Failing || s.Wake.LastError == "" {
		t.Errorf("after one failed check, wake = %+v, want 1 failure, not failing yet, the error", s.Wake)
	}
	for _, p := range chat.all() {
		if strings.Contains(p, "check failed") {
			t.Errorf("the first failed check was posted: %q", p)
		}
	}
	h.clock.Set(at(12, 2))
	h.waitHistory("notes", "the second failed check", func(r []api.ScheduleRun) bool { return outcomes(r) == "check_failed check_failed" })
	s, _ := api.ScheduleRoute.Do(ctx, h.c, "notes", api.None{})
	if s.Wake == nil || s.Wake.Failures != 2 || !s.Wake.Failing {
		t.Errorf("after two failed checks, wake = %+v, want failing", s.Wake)
	}
	if !testutil.Wait(10*time.Second, func() bool {
		for _, p := range chat.all() {
			if strings.Contains(p, "check failed 2 times in a row") && strings.Contains(p, "notes") {
				return true
			}
		}
		return false
	}) {
		t.Errorf("the second failed check in a row was not posted to chat: %q", chat.all())
	}
	if h.chatCalls() != 0 {
		t.Errorf("failed checks (--when-failed skip) made %d model calls", h.chatCalls())
	}
	checks := h.manager().WakeChecks(ctx)
	if len(checks) != 1 || checks[0].Status != api.CheckFail || checks[0].Name != "schedule notes" || !strings.Contains(checks[0].Fix, "schedule show notes") {
		t.Errorf("doctor's lines = %+v, want schedule notes failing with the fix", checks)
	}
}

// Conditions are refused by the guards the commands use, with errors naming the fix: a
// path out of the workspace, a symlink leading out, a private address, no such path.
func TestHostileConditionsAreRefused(t *testing.T) {
	h := newHarness(t, at(12, 0))
	h.withWake(nil)
	ctx := context.Background()
	ws := h.watcher("watcher")
	if err := os.Symlink("/etc", filepath.Join(ws, "out")); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(ws, "private", "key.txt"), "secret\n")
	tests := []struct {
		name string
		when api.WakeConditions
		want string
	}{
		{"dot_dot", api.WakeConditions{Changed: []string{"../other"}}, ".."},
		{"symlink_out", api.WakeConditions{Changed: []string{"out/passwd"}}, "out"},
		{"absolute_not_read_only", api.WakeConditions{Changed: []string{"/etc"}}, "read-only"},
		{"missing", api.WakeConditions{Changed: []string{"nope"}}, "does not exist"},
		{"denied_path", api.WakeConditions{Changed: []string{"private/key.txt"}}, "deny rules"},
		{"loopback_url", api.WakeConditions{URLs: []string{"http://127.0.0.1:9/"}}, "--when-url"},
		{"metadata_url", api.WakeConditions{URLs: []string{"http://169.254.169.254/latest"}}, "--when-url"},
		{"no_shell", api.WakeConditions{Commands: []string{"true"}}, "execute_shell"},
		{"bad_policy", api.WakeConditions{Changed: []string{"notes"}, OnFailure: "retry"}, "skip"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := api.AddScheduleRoute.Do(ctx, h.c, "", api.ScheduleRequest{Name: "x", Spec: "* * * * *", Agent: "watcher", Goal: "g", When: &tt.when})
			if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), "when") {
				t.Errorf("add with %+v = %v, want a bad request naming %q", tt.when, err, tt.want)
			}
		})
	}
	if l, _ := api.SchedulesRoute.Do(ctx, h.c, "", api.None{}); len(l) != 0 {
		t.Errorf("refused schedules were stored: %+v", l)
	}
}

// Conditions are set and cleared on an existing schedule; a cleared schedule wakes at
// every firing again.
func TestSetScheduleWhenSetsAndClears(t *testing.T) {
	h := newHarness(t, at(12, 0))
	h.withWake(nil)
	ctx := context.Background()
	h.watcher("watcher")
	h.add(api.ScheduleRequest{Name: "notes", Spec: "@daily", Agent: "watcher", Goal: "g"})
	s, err := api.SetScheduleWhenRoute.Do(ctx, h.c, "notes", api.WakeConditions{Changed: []string{"notes"}, All: true})
	if err != nil || s.When == nil || !s.When.All || s.Wake == nil {
		t.Fatalf("set = %+v, %v", s, err)
	}
	if _, err := api.SetScheduleWhenRoute.Do(ctx, h.c, "notes", api.WakeConditions{Changed: []string{"../x"}}); err == nil {
		t.Error("a path out of the workspace was set")
	}
	if s, _ := api.ScheduleRoute.Do(ctx, h.c, "notes", api.None{}); s.When == nil || s.When.Changed[0] != "notes" {
		t.Errorf("a refused edit changed the conditions: %+v", s.When)
	}
	s, err = api.SetScheduleWhenRoute.Do(ctx, h.c, "notes", api.WakeConditions{})
	if err != nil || s.When != nil || s.Wake != nil {
		t.Fatalf("clear = %+v, %v", s, err)
	}
}

// A check command runs in the agent's sandbox: exit 1 is nothing to do, exit 0 wakes the
// model with the command's output in the run's first prompt.
func TestCheckCommandWakesWithItsOutput(t *testing.T) {
	h := newHarness(t, at(12, 0))
	h.withWake(sandboxShell(t))
	h.finishAtOnce()
	ws := h.watcher("watcher")
	h.add(api.ScheduleRequest{Name: "inbox", Spec: "* * * * *", Agent: "watcher", Goal: "triage", Autonomy: api.Autonomy{Mode: "auto", Steps: 1},
		When: &api.WakeConditions{Commands: []string{"test -e notes/new || exit 1; echo found-new-mail"}}})
	h.clock.Set(at(12, 1))
	h.waitHistory("inbox", "a quiet check", func(r []api.ScheduleRun) bool { return outcomes(r) == "nothing_to_do" })
	if h.chatCalls() != 0 {
		t.Fatalf("a check exiting 1 made %d model calls", h.chatCalls())
	}
	writeFile(t, filepath.Join(ws, "notes", "new"), "x")
	h.clock.Set(at(12, 2))
	h.waitHistory("inbox", "the woken run", func(r []api.ScheduleRun) bool { return len(r) == 2 && r[0].Outcome == api.RunFinished })
	reqs := h.fake.Requests()
	if len(reqs) == 0 {
		t.Fatal("no model call")
	}
	var prompt strings.Builder
	for _, m := range reqs[0].Messages {
		prompt.WriteString(m.Content)
	}
	if !strings.Contains(prompt.String(), "found-new-mail") {
		t.Errorf("the first prompt lacks the check's output:\n%s", prompt.String())
	}
}

// sandboxShell returns an execute_shell under bwrap, or skips the test.
func sandboxShell(t testing.TB) shell.Checker { return shelltest.Sandboxed(t) }

// A missed firing's catch-up (missed run_once) is checked like any firing: after a
// restart with nothing changed it records nothing_to_do, not a run.
func TestCatchUpFiringIsChecked(t *testing.T) {
	h, _, _ := newWatching(t)
	h.add(api.ScheduleRequest{Name: "notes", Spec: "0 * * * *", Agent: "watcher", Goal: "summarize", Missed: "run_once",
		Autonomy: api.Autonomy{Mode: "auto", Steps: 1}, When: &api.WakeConditions{Changed: []string{"notes"}}})
	h.clock.Set(at(13, 0))
	h.waitHistory("notes", "the first look", func(r []api.ScheduleRun) bool { return outcomes(r) == "finished" })
	calls := h.chatCalls()
	h.stopManager() // the daemon goes down at 13:00…
	h.clock.Set(at(15, 30))
	h.startManager() // …and comes back at 15:30: 14:00 was missed, 15:00 is caught up
	h.waitHistory("notes", "the checked catch-up", func(r []api.ScheduleRun) bool { return outcomes(r) == "finished missed nothing_to_do" })
	if h.chatCalls() != calls {
		t.Errorf("the quiet catch-up made %d model calls", h.chatCalls()-calls)
	}
}
