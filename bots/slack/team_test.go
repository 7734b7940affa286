package slack

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentd/agentd/internal/fakeslack"
)

// newTeamEnv is an env with a team engine and a teams directory holding build.toml and
// a broken bad.toml.
func newTeamEnv(t *testing.T) *env {
	e := &env{}
	e.WithTeams(t, map[string]string{"bad.toml": "name = \"bad\"\nroot = \"nowhere\"\n"})
	return newEnvWith(t, e)
}

// teamThread waits for the thread of the team run of workflow.
func (e *env) teamThread(workflow string) string {
	e.t.Helper()
	var ts string
	e.wait("the team's thread", func(v fakeslack.View) bool {
		for _, m := range v.Messages(channel, "") {
			if strings.Contains(m.Text, "Team "+workflow+":") || strings.Contains(string(m.Blocks), "Team "+workflow+":") {
				ts = m.TS
				return true
			}
		}
		return false
	})
	return ts
}

// TestTeamCommandRefusals: a stranger may not start a team; a bad FILE gets a clear
// error and no thread, a stop without a known id its usage or a refusal; /agent team
// alone lists the workflows. (A file outside the teams directory is the
// team_file_outside scenario.)
func TestTeamCommandRefusals(t *testing.T) {
	e := newTeamEnv(t)
	for _, tc := range []struct{ user, text, want string }{
		{stranger, "team build say hi", "not an approver"},
		{approver, "team ../../etc/passwd x", `".." is refused`},
		{approver, "team nope x", `no workflow "nope" in the teams directory`},
		{approver, "team bad x", "Could not start the team: " + filepath.Join(e.TeamsDir, "bad.toml")},
		{approver, "team build", "Usage: /agent team FILE TASK"},
		{approver, "team", "Workflows: bad, build"},
		{approver, "team stop", "Usage: /agent team stop ID"},
		{approver, "team stop t-nope", `no team run "t-nope"`},
	} {
		if got := e.answer(e.slack.Slash(tc.user, channel, "/agent", tc.text)); !strings.Contains(got, tc.want) {
			t.Errorf("%s: /agent %s = %q, want %q", tc.user, tc.text, got, tc.want)
		}
	}
	if ms := e.messagesIn(""); hasText(ms, "Team ") {
		t.Errorf("a refused /agent team opened a thread:\n%s", texts(ms))
	}
	if runs, _ := e.Eng.Teams(t.Context()); len(runs) != 0 {
		t.Errorf("team runs started: %+v", runs)
	}
}

// TestTeamFollowedAfterRestart: the daemon restarts while the programmer's proposal
// waits; the relay finds the team's thread again, does not post its turns or the
// proposal twice, and an approval typed there ("programmer: y") lets the run end, which
// is posted.
func TestTeamFollowedAfterRestart(t *testing.T) {
	e := newTeamEnv(t)
	e.Script(touch("page"),
		reply("finish", map[string]string{"reason": "<INFO> touched the page"}))
	e.answer(e.slack.Slash(approver, channel, "/agent", "team build say hi"))
	thread := e.teamThread("build")
	e.roleProposal(thread, "programmer", 1)
	e.restart()
	e.slack.Say(approver, channel, "channel", thread, "programmer: y", false)
	e.wait("the run's end", func(v fakeslack.View) bool {
		return hasText(v.Messages(channel, thread), "Team run finished")
	})
	ms := e.messagesIn(thread)
	if n, m := strings.Count(texts(ms), "[ceo] Instruction"), strings.Count(texts(ms), "[programmer] Step 1:"); n != 1 || m != 1 {
		t.Errorf("CEO's turn posted %d times, the proposal %d times:\n%s", n, m, texts(ms))
	}
}

// roleProposal waits for the proposal of role's step in a team's thread, labelled [role].
func (e *env) roleProposal(thread, role string, step int) fakeslack.Message {
	e.t.Helper()
	var got fakeslack.Message
	want := fmt.Sprintf("[%s] Step %d:", role, step)
	if !e.slack.Wait(10*time.Second, func(v fakeslack.View) bool {
		for _, m := range v.Messages(channel, thread) {
			if strings.HasPrefix(m.Text, want) {
				got = m
				return true
			}
		}
		return false
	}) {
		e.t.Fatalf("no %q in the thread:\n%s\nlogs:\n%s", want, texts(e.messagesIn(thread)), e.Logs.String())
	}
	return got
}

func (e *env) messagesIn(thread string) []fakeslack.Message {
	var ms []fakeslack.Message
	e.slack.Wait(0, func(v fakeslack.View) bool { ms = v.Messages(channel, thread); return true })
	return ms
}

func texts(ms []fakeslack.Message) string {
	var b strings.Builder
	for _, m := range ms {
		b.WriteString(m.Text + "\n")
	}
	return b.String()
}
