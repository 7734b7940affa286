package slack

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/agentd/agentd/commands"
	"github.com/agentd/agentd/internal/chattest"
	"github.com/agentd/agentd/internal/fakeslack"
)

// labelledProposal waits for the proposal message of helper key's step in thread: it is
// in its parent's thread, labelled with the helper's name.
func (e *env) labelledProposal(thread, key string, step int) fakeslack.Message {
	e.t.Helper()
	var got fakeslack.Message
	want := fmt.Sprintf("/%s] Step %d:", key, step)
	e.wait("helper "+key+"'s proposal "+want, func(v fakeslack.View) bool {
		for _, m := range v.Messages(channel, thread) {
			if strings.Contains(m.Text, want) {
				got = m
				return true
			}
		}
		return false
	})
	return got
}

// TestHelperDecidedInParentsThread: a run started from Slack starts a helper; the
// helper's proposals appear in the run's thread labelled with its name, a click there
// approves them (so does "fetcher: y" typed there), and the helper's finish reason is
// the parent's start_agent result.
// helperResult is the helper's finish line, then what the helper changed in the
// workspace when it changed anything.
var helperResult = regexp.MustCompile(`^helper fetcher finished: touched the page(\n\[workspace: changed [^\]\n]+\])?$`)

func TestHelperDecidedInParentsThread(t *testing.T) {
	e := newEnvWith(t, &env{Daemon: chattest.Daemon{Commands: []string{commands.StartAgent, commands.MessageAgent, commands.ListAgents, commands.DeleteAgent}}})
	e.Script(
		reply("start_agent", map[string]string{"name": "fetcher", "task": "fetches", "prompt": "touch the page"}),
		touch("page"),
		reply("finish", map[string]string{"reason": "touched the page"}))
	thread := e.startRun("get the page via a helper")
	start := e.proposal(thread, 1)
	if !strings.Contains(start.Text, "start_agent") {
		t.Fatalf("first proposal = %q, want start_agent", start.Text)
	}
	e.click(approver, thread, start, "approve")

	touch := e.labelledProposal(thread, "fetcher", 1)
	if !strings.Contains(touch.Text, "bots_test_touch") || !strings.Contains(string(touch.Blocks), "/fetcher") {
		t.Fatalf("helper's proposal = %q %s", touch.Text, touch.Blocks)
	}
	e.click(approver, thread, touch, "approve")
	e.decided(thread, touch.TS, "Approved* by")
	e.wait("the helper's result", func(v fakeslack.View) bool { return hasText(v.Messages(channel, thread), "touched page") })

	// Typed in the thread, by the helper's name.
	fin := e.labelledProposal(thread, "fetcher", 2)
	e.slack.Say(approver, channel, "channel", thread, "fetcher: y", false)
	e.decided(thread, fin.TS, "Approved* by")
	e.wait("the parent's start_agent result", func(v fakeslack.View) bool {
		return hasText(v.Messages(channel, thread), "helper fetcher finished: touched the page")
	})

	agents, err := e.Sup.API().Views.Agents(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var parent string
	for _, a := range agents {
		if a.ParentID == "" {
			parent = a.ID
		}
	}
	eps, err := e.Sup.API().Views.History(context.Background(), parent)
	if err != nil || len(eps) == 0 {
		t.Fatalf("parent's history: %v, %v", eps, err)
	}
	if ep := eps[0]; ep.Command != "start_agent" || ep.Outcome != "succeeded" || !helperResult.MatchString(ep.Result) {
		t.Fatalf("parent's start_agent episode = %+v", ep)
	}
}

// Removing a parent while its helper's proposal waits closes that proposal in the
// parent's thread and says there that each was removed, although the store deletes the
// thread's binding with them: the removal events name the thread.
func TestRemovedParentClosesItsHelpersProposalInItsThread(t *testing.T) {
	e := newEnvWith(t, &env{Daemon: chattest.Daemon{Commands: []string{commands.StartAgent, commands.MessageAgent, commands.ListAgents, commands.DeleteAgent}}})
	e.Script(
		reply("start_agent", map[string]string{"name": "fetcher", "task": "fetches", "prompt": "touch the page"}),
		touch("page"))
	thread := e.startRun("get the page via a helper")
	e.click(approver, thread, e.proposal(thread, 1), "approve")
	touch := e.labelledProposal(thread, "fetcher", 1)
	if err := e.Sup.API().Runs.DeleteAgent(context.Background(), e.agentOf(thread).ID); err != nil {
		t.Fatal(err)
	}
	e.decided(thread, touch.TS, "removed before a decision")
	e.wait("the helper's and the parent's removal notes", func(v fakeslack.View) bool {
		removed := 0
		for _, m := range v.Messages(channel, thread) {
			if strings.Contains(m.Text, "The agent was removed.") {
				removed++
			}
		}
		return removed == 2
	})
}
