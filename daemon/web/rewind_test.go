package web

import (
	"context"
	"errors"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentd/agentd/api"
	"github.com/agentd/agentd/internal/testutil"
)

// From the agent's page a person sees what a rewind would change, confirms, and the
// workspace is put back; the form needs the session's CSRF token like every other.
func TestRewindFromTheConsole(t *testing.T) {
	e := newEnv(t)
	e.script(reply("write_file", map[string]string{"path": "a.txt", "contents": "one\n"}, nil),
		reply("write_file", map[string]string{"path": "b.txt", "contents": "two\n"}, nil))
	a := e.create("writer")
	e.waitState(a.ID, api.StateAwaitingDecision)
	b := e.browser()
	b.login(e)
	csrf := b.csrf()
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
	done := b.post("/agents/"+a.ID+"/rewind", url.Values{"csrf": {csrf}, "to": {"1"}}).Body
	if _, err := os.Stat(file); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("after the rewind a.txt is still there: %v\n%s", err, done)
	}
	must(t, strings.Contains(done, "rewound to before step 1"), "the page does not confirm the rewind:\n%s", done)
}
