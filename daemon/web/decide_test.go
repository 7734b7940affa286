package web

import (
	"context"
	"errors"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/agentd/agentd/api"
	"github.com/agentd/agentd/internal/testutil"
)

var (
	proposalRE = regexp.MustCompile(`name="proposal_id" value="([^"]+)"`)
	hashRE     = regexp.MustCompile(`name="hash" value="([0-9a-f]+)"`)
)

// shown reads the proposal id and hash the agent's page binds its controls to.
func (b *browser) shown(agent string) (id, hash, body string) {
	b.t.Helper()
	body = b.get("/agents/" + agent).Body
	p, h := proposalRE.FindStringSubmatch(body), hashRE.FindStringSubmatch(body)
	if p == nil {
		b.t.Fatalf("the agent's page shows no proposal to decide:\n%s", body)
	}
	if h != nil {
		hash = h[1]
	}
	return p[1], hash, body
}

// awaitingWriter creates the agent writer, waits until it awaits a decision and logs a
// browser in: the agent, the browser and its session's CSRF token.
func (e *env) awaitingWriter() (*api.Agent, *browser, string) {
	a := e.create("writer")
	e.waitState(a.ID, api.StateAwaitingDecision)
	b := e.loggedIn()
	return a, b, b.csrf()
}

func TestDecideFromTheConsole(t *testing.T) {
	e := newEnv(t)
	e.script(reply("write_file", map[string]string{"path": "a.txt", "contents": "one\n"}, nil),
		reply("write_file", map[string]string{"path": "b.txt", "contents": "two\n"}, nil),
		reply("write_file", map[string]string{"path": "c.txt", "contents": "three\n"}, nil),
		reply("ask_user", map[string]string{"question": "Which folder?"}, nil))
	a, b, csrf := e.awaitingWriter()

	id, hash, body := b.shown(a.ID)
	for _, want := range []string{"write_file", "a.txt", `<span class="add">&#43;one</span>`, "Reasoning", "because", "Approve ×N"} {
		must(t, strings.Contains(body, want), "the agent page does not show %q:\n%s", want, body)
	}
	list := b.get("/").Body
	must(t, strings.Contains(list, "decide: write_file") && strings.Contains(list, "awaiting_decision"), "the agents page does not say what waits:\n%s", list)

	// A decision bound to another hash is refused by the daemon, and the page says so.
	got := b.post("/agents/"+a.ID+"/decide", url.Values{"csrf": {csrf}, "proposal_id": {id}, "hash": {strings.Repeat("ab", 32)}, "kind": {"approve"}})
	must(t, strings.Contains(got.Body, "not decided"), "a decision with the wrong hash was not refused:\n%s", got.Body)

	// Approve ×2: this write and the next run.
	b.post("/agents/"+a.ID+"/decide", url.Values{"csrf": {csrf}, "proposal_id": {id}, "hash": {hash}, "kind": {"approve"}, "count": {"2"}})
	e.waitState(a.ID, api.StateAwaitingDecision)
	id3, hash3, body := b.shown(a.ID)
	must(t, id3 != id && strings.Contains(body, "c.txt"), "after approve ×2 the third write should wait:\n%s", body)
	hist, _ := e.sup.API().Views.History(context.Background(), a.ID)
	must(t, len(hist) == 2 && hist[0].Outcome == "succeeded" && hist[1].Outcome == "succeeded", "both writes should have run: %+v", hist)
	must(t, hist[0].Decision != nil && hist[0].Decision.By == "tester" && hist[0].Decision.Source == "web", "decision not recorded as the console's: %+v", hist[0].Decision)

	// Feedback: not run, the text goes to the model.
	b.post("/agents/"+a.ID+"/decide", url.Values{"csrf": {csrf}, "proposal_id": {id3}, "hash": {hash3}, "kind": {"feedback"}, "feedback": {"use the docs folder"}})
	e.waitState(a.ID, api.StateAwaitingDecision)
	_, _, body = b.shown(a.ID)
	must(t, strings.Contains(body, "Which folder?"), "the question should wait:\n%s", body)
	must(t, strings.Contains(body, "use the docs folder"), "the feedback should show in the history")

	// Too long an answer (in bytes, not characters) is refused with the limit named.
	long := strings.Repeat("é", api.MaxTextBytes/2+1)
	qid := proposalRE.FindStringSubmatch(body)[1]
	got = b.post("/agents/"+a.ID+"/answer", url.Values{"csrf": {csrf}, "proposal_id": {qid}, "text": {long}})
	must(t, strings.Contains(got.Body, "the limit is 8000 bytes"), "a long answer was not refused by its bytes:\n%s", got.Body)
	b.post("/agents/"+a.ID+"/answer", url.Values{"csrf": {csrf}, "proposal_id": {qid}, "text": {"docs/"}})
	must(t, testutil.Wait(10*time.Second, func() bool {
		a, err := e.sup.API().Views.Agent(context.Background(), a.ID)
		return err == nil && a.Pending != nil && a.Pending.Command == "finish"
	}), "after the answer the agent should propose finish")
	hist, _ = e.sup.API().Views.History(context.Background(), a.ID)
	must(t, len(hist) == 4 && hist[2].Outcome == "feedback" && hist[3].Command == "ask_user" && strings.Contains(hist[3].Result, "docs/"),
		"history after feedback and answer: %+v", hist)
}

// From the agent's page a person sees what a rewind would change, confirms, and the
// workspace is put back; the form needs the session's CSRF token like every other.
func TestRewindFromTheConsole(t *testing.T) {
	e := newEnv(t)
	e.script(reply("write_file", map[string]string{"path": "a.txt", "contents": "one\n"}, nil),
		reply("write_file", map[string]string{"path": "b.txt", "contents": "two\n"}, nil))
	a, b, csrf := e.awaitingWriter()
	id, hash, _ := b.shown(a.ID)
	b.post("/agents/"+a.ID+"/decide", url.Values{"csrf": {csrf}, "proposal_id": {id}, "hash": {hash}, "kind": {"approve"}})
	if !testutil.Wait(30*time.Second, func() bool {
		v, err := e.sup.API().Views.Agent(context.Background(), a.ID)
		return err == nil && v.Pending != nil && v.Pending.Step == 2
	}) {
		t.Fatal("the second proposal never came")
	}
	file := filepath.Join(a.Workspace, "a.txt")
	if _, err := os.Stat(file); err != nil {
		t.Fatal(err)
	}
	page := b.get("/agents/" + a.ID).Body
	must(t, strings.Contains(page, `action="/agents/`+a.ID+`/rewind"`), "the agent page offers no rewind:\n%s", page)
	plan := b.get("/agents/" + a.ID + "/rewind?to=1").Body
	must(t, strings.Contains(plan, "deleted file a.txt") && strings.Contains(plan, `name="to" value="1"`), "the rewind page does not say what it would change:\n%s", plan)
	if _, err := os.Stat(file); err != nil {
		t.Fatalf("showing the rewind changed the workspace: %v", err)
	}
	b.post("/agents/"+a.ID+"/rewind", url.Values{"to": {"1"}})
	if _, err := os.Stat(file); err != nil {
		t.Fatalf("a rewind without the CSRF token was carried out: %v", err)
	}
	refused := b.post("/agents/"+a.ID+"/rewind", url.Values{"csrf": {csrf}, "to": {"1"}}).Body
	if _, err := os.Stat(file); err != nil {
		t.Fatalf("a rewind without the workspace it was shown was carried out: %v", err)
	}
	must(t, strings.Contains(refused, "send its from back as shown"), "a form without shown is not told the fix:\n%s", refused)
	done := b.post("/agents/"+a.ID+"/rewind", rewindForm(t, plan, csrf)).Body
	if _, err := os.Stat(file); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("after the rewind a.txt is still there: %v\n%s", err, done)
	}
	must(t, strings.Contains(done, "rewound to before step 1"), "the page does not confirm the rewind:\n%s", done)
}

var (
	rewindRunRE   = regexp.MustCompile(`name="run" value="([^"]*)"`)
	rewindShownRE = regexp.MustCompile(`name="shown" value="([0-9a-f]{64})"`)
)

// rewindForm is the form a rewind page posts: its step, run and the workspace shown.
func rewindForm(t *testing.T, page, csrf string) url.Values {
	t.Helper()
	run, shown := rewindRunRE.FindStringSubmatch(page), rewindShownRE.FindStringSubmatch(page)
	if run == nil || shown == nil {
		t.Fatalf("the rewind page binds its form to no run or no workspace shown:\n%s", page)
	}
	return url.Values{"csrf": {csrf}, "to": {"1"}, "run": {run[1]}, "shown": {shown[1]}}
}

// The console rewinds a step of any run, not only the latest's: the agent page offers
// the runs, the rewind page of an earlier run's step names it, and confirming puts the
// workspace back as before that run's step.
func TestRewindAnEarlierRunsStepFromTheConsole(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	e.script(reply("write_file", map[string]string{"path": "a.txt", "contents": "first run\n"}, nil))
	a := e.create("writer")
	first := e.approveRun(a.ID)
	e.script(reply("write_file", map[string]string{"path": "b.txt", "contents": "second run\n"}, nil))
	if _, err := e.sup.API().Runs.TaskRun(ctx, a.ID, api.TaskRequest{Task: "write b.txt"}); err != nil {
		t.Fatal(err)
	}
	e.approveRun(a.ID)
	b := e.loggedIn()
	csrf := b.csrf()
	page := b.get("/agents/" + a.ID).Body
	must(t, strings.Contains(page, `<option value="`+first+`">`), "the agent page does not offer run %s to rewind:\n%s", first, page)
	latest := b.get("/agents/" + a.ID + "/rewind?to=1").Body
	must(t, strings.Contains(latest, `?to=1&amp;run=`+first), "the latest run's rewind page does not link step 1 of run %s:\n%s", first, latest)
	plan := b.get("/agents/" + a.ID + "/rewind?to=1&run=" + first).Body
	must(t, strings.Contains(plan, "of run "+first) && strings.Contains(plan, "deleted file a.txt"), "the rewind page of run %s:\n%s", first, plan)
	done := b.post("/agents/"+a.ID+"/rewind", rewindForm(t, plan, csrf)).Body
	for name, want := range map[string]bool{"a.txt": false, "b.txt": false} {
		if _, err := os.Stat(filepath.Join(a.Workspace, name)); (err == nil) != want {
			t.Errorf("after rewinding to before step 1 of run %s, %s there = %v, want %v\n%s", first, name, err == nil, want, done)
		}
	}
	must(t, strings.Contains(done, "rewound to before step 1 of run "+first), "the page does not confirm which run's step:\n%s", done)
}

// approveRun approves the agent's proposals (a step, then finish) until its run ends,
// and returns the run's id.
func (e *env) approveRun(id string) string {
	e.t.Helper()
	last := ""
	for range 2 {
		var p *api.Proposal
		if !testutil.Wait(10*time.Second, func() bool {
			a, err := e.sup.API().Views.Agent(context.Background(), id)
			p = nil
			if err == nil && a.Pending != nil && a.Pending.ID != last {
				p = a.Pending
			}
			return p != nil
		}) {
			e.t.Fatalf("agent %s never proposed after %q", id, last)
		}
		last = p.ID
		if _, err := e.sup.API().Decisions.Decide(context.Background(), id, api.DecideRequest{ProposalID: p.ID, Kind: api.DecisionApprove, By: "pat", Source: "agentctl"}); err != nil {
			e.t.Fatal(err)
		}
	}
	return e.waitState(id, api.StateIdle).RunID
}
