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

// TestTeamStopTakesNoFileOrTaskAndPingsNobody: /agent team stop:ID with a file or a task
// too is refused in the answer that replaces the deferred "thinking…" and stops nothing;
// the end a stop posts names who stopped it without pinging them. (What a stop does on
// every platform is the team_stop scenario.)
func TestTeamStopTakesNoFileOrTaskAndPingsNobody(t *testing.T) {
	c := newChat(t)
	c.Script(touch("page"))
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
