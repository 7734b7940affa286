package discord

import (
	"strings"
	"testing"

	"github.com/agentd/agentd/api"
	"github.com/agentd/agentd/internal/chattest"
	"github.com/agentd/agentd/internal/fakediscord"
)

// newTeamEnv is an env with a team engine and a teams directory holding build.toml.
func newTeamEnv(t *testing.T) *env {
	e := &env{}
	e.WithTeams(t, map[string]string{})
	return newEnvWith(t, e)
}

// teamCommand runs /agent team with the options given (file, task, id: name=value).
func (e *env) teamCommand(u fakediscord.User, opts ...string) fakediscord.Interaction {
	e.t.Helper()
	var o []fakediscord.CommandOption
	for _, kv := range opts {
		k, v, _ := strings.Cut(kv, "=")
		o = append(o, fakediscord.CommandOption{Type: 3, Name: k, Value: v})
	}
	in, err := e.fake.Command(eChannel, u, CommandName, fakediscord.CommandOption{Type: 1, Name: SubTeam, Options: o})
	if err != nil {
		e.t.Fatal(err)
	}
	return in
}

// teamThread waits for the thread of the team run of workflow: it hangs off a root
// message in the channel.
func (e *env) teamThread(workflow string) string {
	e.t.Helper()
	var thread string
	e.wait("the team's thread", func() bool {
		for _, m := range e.fake.Messages(eChannel) {
			if strings.Contains(m.Content, "Team "+workflow+":") {
				if ch, ok := e.fake.Channel(m.ID); ok && ch.ParentID == eChannel {
					thread = m.ID
					return true
				}
			}
		}
		return false
	})
	return thread
}

// roleProposal waits for the proposal of role's step in a team's thread; Discord shows
// the role where it shows an agent's name.
func (e *env) roleProposal(thread, role string, step int) fakediscord.Message {
	e.t.Helper()
	p := e.proposal(thread, step)
	if !strings.HasPrefix(p.Content, "**🤖 "+role+"**") {
		e.t.Fatalf("step %d's proposal is not labelled %s: %q", step, role, p.Content)
	}
	return p
}

// TestTeamRunInThread: /agent team file task starts a team run in a new thread; each
// role's turn is posted labelled with its role; the programmer's proposals are posted
// there, sent back with feedback through the dialog, then approved by a click, both
// named by custom_ids that carry the proposal alone (the relay finds the role agent
// through the team's thread); the phase's end and the run's end are posted with their
// reasons.
func TestTeamRunInThread(t *testing.T) {
	e := newTeamEnv(t)
	e.Script(reply("bots_test_touch", map[string]string{"what": "page"}),
		reply("bots_test_touch", map[string]string{"what": "roof"}),
		reply("finish", map[string]string{"reason": "<INFO> touched the roof"}))
	in := e.teamCommand(uAlice, "file=build", "task=say hi")
	e.wait("the answer", func() bool { return e.original(in, "Started team run t-") })
	thread := e.teamThread("build")
	e.wait("the CEO's turn", func() bool { return hasText(e.fake.Messages(thread), "**\\[ceo\\]** Instruction: touch the page.") })

	p := e.roleProposal(thread, "programmer", 1)
	if !strings.Contains(p.Content, `bots\_test\_touch`) {
		t.Fatalf("role's proposal = %q", p.Content)
	}
	opened := e.click(uAlice, thread, p, ActionFeedback)
	e.wait("the feedback dialog", func() bool { return e.fake.InteractionResponse(opened.ID).Type == 9 })
	if _, err := e.fake.SubmitModal(opened, uAlice, map[string]string{feedbackInputID: "the roof, not the page"}); err != nil {
		t.Fatal(err)
	}
	e.decided(p.ID, "Feedback** by <@"+uAlice.ID+">: the roof, not the page")
	e.modelSaw("the roof, not the page")

	p = e.roleProposal(thread, "programmer", 2)
	// bob is no approver: his click changes nothing.
	bob := e.click(uBob, thread, p, ActionApprove)
	e.wait("bob's refusal", func() bool {
		notes := e.ephemerals(bob)
		return len(notes) == 1 && strings.Contains(notes[0], "not an approver")
	})
	e.click(uCarol, thread, p, ActionApprove)
	e.decided(p.ID, "Approved** by <@"+uCarol.ID+">")
	e.wait("the run's end", func() bool {
		return hasText(e.fake.Messages(thread), "state build has no next state")
	})
	ms := e.fake.Messages(thread)
	// Discord's markdown escapes _, (, ), [, ] and >.
	for _, want := range []string{`bots\_test\_touch** succeeded`, "touched roof", `**\[programmer\]** <INFO\> touched the roof`,
		"**📌 code concluded → code:** touched the roof", `**⏹ Phase code ended \(info\):** programmer concluded`, "**🏁 Team run finished:**"} {
		if !hasText(ms, want) {
			t.Errorf("the thread has no %q:\n%s", want, strings.Join(contentsOf(ms), "\n"))
		}
	}
	if hasText(ms, "was removed") || hasText(ms, "touched page") || countText(ms, "Instruction: touch the page.") != 1 || countText(ms, "Step 2: ") != 1 {
		t.Errorf("thread:\n%s", strings.Join(contentsOf(ms), "\n"))
	}
}

// TestTeamStopTakesNoFileOrTaskAndPingsNobody: /agent team stop:ID with a file or a task
// too is refused in the answer that replaces the deferred "thinking…" and stops nothing;
// the end a stop posts names who stopped it without pinging them. (What a stop does on
// every platform is the team_stop scenario.)
func TestTeamStopTakesNoFileOrTaskAndPingsNobody(t *testing.T) {
	c := newChat(t)
	c.Script(reply("bots_test_touch", map[string]string{"what": "page"}))
	thread := c.StartTeam("build", "say hi")
	c.roleProposal(thread, "programmer", 1)
	runs, err := c.Eng.Teams(t.Context())
	if err != nil || len(runs) != 1 {
		t.Fatalf("team runs = %+v, %v", runs, err)
	}
	id := runs[0].ID
	both := c.teamCommand(uCarol, "stop="+id, "file=build", "task=x")
	c.wait("a refusal of stop with a file", func() bool { return c.original(both, "stop takes no file or task") })
	if r := c.fake.InteractionResponse(both.ID); r.Type != 5 {
		t.Errorf("/agent team answered with %+v, want deferred (5)", r)
	}
	if r, _ := c.Eng.Team(t.Context(), id); r.Status != api.TeamRunning {
		t.Fatalf("a refused stop stopped the run: %s (%s)", r.Status, r.Reason)
	}
	c.StopTeam(chattest.GroupApprover, id)
	c.wait("the run's end", func() bool {
		return hasText(c.fake.Messages(thread), "**🏁 Team run stopped:** stopped by <@"+uCarol.ID+">")
	})
	for _, m := range c.fake.Messages(thread) {
		if strings.Contains(m.Content, "Team run stopped") && len(m.Mentions) != 0 {
			t.Errorf("the end pinged %v", m.Mentions)
		}
	}
}
