package web

import (
	"context"
	"net/url"
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

func TestDecideFromTheConsole(t *testing.T) {
	e := newEnv(t)
	e.script(reply("write_file", map[string]string{"path": "a.txt", "contents": "one\n"}, nil),
		reply("write_file", map[string]string{"path": "b.txt", "contents": "two\n"}, nil),
		reply("write_file", map[string]string{"path": "c.txt", "contents": "three\n"}, nil),
		reply("ask_user", map[string]string{"question": "Which folder?"}, nil))
	a := e.create("writer")
	e.waitState(a.ID, api.StateAwaitingDecision)
	b := e.browser()
	b.login(e)
	csrf := b.csrf()

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
