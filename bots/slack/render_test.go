package slack

import (
	"encoding/json"
	"maps"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentd/agentd/api"
	"github.com/agentd/agentd/bots"
	"github.com/agentd/agentd/internal/chattest"
	"github.com/agentd/agentd/internal/testutil"
)

// TestBlocksGolden fixes the Block Kit the bot posts: escaping, code blocks, buttons; of
// proposals, results, and a rewind's question and end (chattest.CheckpointMessages),
// whose buttons show only while it asks.
func TestBlocksGolden(t *testing.T) {
	p := &api.Proposal{ID: "p-1", AgentID: "a-1", Step: 3, Command: "write_file", Status: api.ProposalPending,
		Args:     json.RawMessage(`{"path":"notes/<a>.md","contents":"x ` + "```" + ` & y"}`),
		Thoughts: api.Thoughts{Speak: "I'll write <b> & save", Plan: "- write\n- finish"}}
	hostile := &api.Proposal{ID: "p-2", AgentID: "a-1", Step: 4, Command: "run_shell\u202e", Status: api.ProposalPending,
		Args:     json.RawMessage("{\"command\":\"rm -rf /\u202etxt.exe\",\"note\":\"\\u001b[2J\u200b\"}"),
		Thoughts: api.Thoughts{Speak: "harmless\u202e\x1b]0;t\x07 \u2066x\u2069", Plan: "- a\u200b\n- b\x1b[31m"}}
	msgs := map[string]bots.Message{
		"proposal_pending": bots.FormatProposal(bots.ProposalView{Proposal: p, ApproveN: 3}, Platform),
		"proposal_decided": bots.FormatProposal(bots.ProposalView{Proposal: p, Decision: &api.Decision{Kind: api.DecisionApprove, Count: 3, By: "U1", Source: Platform}}, Platform),
		"proposal_hostile": bots.FormatProposal(bots.ProposalView{Proposal: hostile, ApproveN: 3}, Platform),
		"result_failed": func() bots.Message {
			m, _ := bots.FormatResult(&api.Episode{Command: "read_file", Outcome: "failed", Result: "no such file: <x>"}, 2500)
			return m
		}(),
	}
	maps.Copy(msgs, chattest.CheckpointMessages(Platform, "U1"))
	for name, m := range msgs {
		t.Run(name, func(t *testing.T) {
			got, err := json.MarshalIndent(Blocks(m), "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			if bad := invisibleIn(got, escape(m.Summary)); bad != "" {
				t.Errorf("the message carries %q raw", bad)
			}
			if asks := strings.Contains(string(got), "agentd_rewind"); asks != (name == "rewind_asked") {
				t.Errorf("rewind buttons shown: %v", asks)
			}
			testutil.Golden(t, filepath.Join("testdata", name+".golden.json"), append(got, '\n'))
		})
	}
}

// invisibleIn returns the first control or bidi character left raw in the strings of
// the encoded blocks js or in extra. (Zero-width spaces are the renderer's own: they break
// runs of backticks.)
func invisibleIn(js []byte, extra string) string {
	all := strings.Join(append(blockStrings(js), extra), "\n")
	for _, bad := range []string{"\u202e", "\u2066", "\u2069", "\x1b", "\x07"} {
		if strings.Contains(all, bad) {
			return bad
		}
	}
	return ""
}

// TestSpansMentionOnlyPlainIDs: a span's user becomes <@…> only when it is a plain Slack
// user id; anything else (a By set by a local API caller) is escaped text, never markup.
func TestSpansMentionOnlyPlainIDs(t *testing.T) {
	for _, c := range []struct{ name, user, want string }{
		{"plain_user_id", "U123ABC", "by <@U123ABC>"},
		{"enterprise_user_id", "W0A1", "by <@W0A1>"},
		{"closes_the_mention", "U1><!channel>", "by U1&gt;&lt;!channel&gt;"},
		{"lowercase_name", "root", "by root"},
		{"discord_snowflake", "123456789012345678", "by 123456789012345678"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := mrkdwn.Spans([]bots.Span{{Text: "by "}, {User: c.user}}); got != c.want {
				t.Errorf("got %q, want %q", got, c.want)
			}
		})
	}
}
