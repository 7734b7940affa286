package slack

import (
	"context"
	"testing"

	"github.com/agentd/agentd/daemon/store"
	"github.com/agentd/agentd/internal/fakeslack"
)

// TestATypedDecisionCarriesTheDisplayName: a "y" typed in the thread names its author by
// id only; the bot asks users.info once and the decision is stored with the display name
// beside the id, so agentctl shows "approved by Ana Lima via slack".
func TestATypedDecisionCarriesTheDisplayName(t *testing.T) {
	e := newEnv(t)
	e.slack.SetUser(approver, "Ana Lima")
	e.Script(touch("one"), touch("two"))
	thread := e.startRun("touch two things")
	for step := 1; step <= 2; step++ {
		p := e.proposal(thread, step)
		e.slack.Say(approver, channel, "channel", thread, "y", false)
		e.decided(thread, p.TS, "Approved* by")
	}
	id := e.agentOf(thread).ID
	var by, name []string
	e.St.View(context.Background(), func(tx *store.Tx) error {
		ds, err := tx.LastDecisions(id)
		for _, d := range ds {
			by, name = append(by, d.By), append(name, d.ByName)
		}
		return err
	})
	if len(by) != 2 || by[0] != approver || name[0] != "Ana Lima" || name[1] != "Ana Lima" {
		t.Errorf("decisions by %v named %v, want %s named Ana Lima twice", by, name, approver)
	}
	var lookups int
	e.slack.Wait(0, func(v fakeslack.View) bool { lookups = len(v.Calls("users.info")); return true })
	if lookups != 1 {
		t.Errorf("%d users.info calls for one person's two replies, want 1 (cached)", lookups)
	}
}
