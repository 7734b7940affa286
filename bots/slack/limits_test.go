package slack

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/slack-go/slack"

	"github.com/agentd/agentd/bots"
	"github.com/agentd/agentd/internal/fakeslack"
)

// hostile is text that grows when escaped and breaks naive cuts: entities, fences,
// backticks, emoji (two UTF-16 units each).
func hostile(n int) string {
	var b strings.Builder
	for b.Len() < n {
		b.WriteString("a&b<c>d ``` e😀 <@U1> &amp; x\n")
	}
	return b.String()[:n]
}

// brokenEntity matches an & that does not start one of the entities escape writes.
var brokenEntity = regexp.MustCompile(`&(?:amp;|lt;|gt;)?`)

// checkFitted checks rendered blocks against Slack's limits and the promises of render:
// no broken entity, balanced fences, and the note exactly when something was cut.
func checkFitted(t testing.TB, blocks []slack.Block, wantCut bool) {
	t.Helper()
	js, _ := json.Marshal(blocks)
	raw := shownBlocks(t, js)
	if len(raw) > maxBlocks {
		t.Errorf("%d blocks, Slack takes %d", len(raw), maxBlocks)
	}
	total, noted := 0, false
	for i, b := range raw {
		text := b.Text
		if b.Type == "context" {
			noted = noted || text == truncatedNote
		}
		if b.Type != "section" && b.Type != "context" {
			continue
		}
		n := slackLen(text)
		total += n
		if n == 0 || n > maxSection {
			t.Errorf("block %d: %d characters", i, n)
		}
		for _, m := range brokenEntity.FindAllString(text, -1) {
			if m == "&" {
				t.Errorf("block %d: a bare & (a cut entity?) in %q", i, text[max(0, len(text)-80):])
				break
			}
		}
		if strings.Count(text, "```")%2 != 0 {
			t.Errorf("block %d: an open ``` fence", i)
		}
	}
	if total > maxBlocksText {
		t.Errorf("%d characters in all, Slack takes %d", total, maxBlocksText)
	}
	if noted != wantCut {
		t.Errorf("truncated note shown %v, want %v", noted, wantCut)
	}
}

// TestRenderFitsSlackLimits: whatever the relay hands over, the blocks fit Slack's
// limits as measured on the final escaped text, and a cut is always said.
func TestRenderFitsSlackLimits(t *testing.T) {
	many := bots.Message{Summary: "many"}
	for range 70 {
		many.Parts = append(many.Parts, bots.Part{Spans: []bots.Span{{Text: "part & <more>"}}})
	}
	btn := []bots.Button{{Action: bots.ActionApprove, Label: "Approve", Ref: bots.Ref{AgentID: "a-1", ProposalID: "p-1", Hash: "0123456789abcdef"}}}
	for _, tc := range []struct {
		name string
		m    bots.Message
		cut  bool
	}{
		{"short", bots.Message{Summary: "s", Parts: []bots.Part{{Spans: []bots.Span{{Text: "a & b"}}}, {Code: "x < y"}}, Buttons: btn}, false},
		{"long_code", bots.Message{Summary: "s", Parts: []bots.Part{{Spans: []bots.Span{{Text: "Step 1", Bold: true}}}, {Code: hostile(10000)}}, Buttons: btn}, true},
		{"long_prose", bots.Message{Summary: "s", Parts: []bots.Part{{Spans: []bots.Span{{Text: hostile(10000)}}}}}, true},
		{"long_quote", bots.Message{Summary: "s", Parts: []bots.Part{{Quote: true, Spans: []bots.Span{{Text: hostile(5000)}}}}}, true},
		{"many_long_parts", bots.Message{Summary: "s", Parts: []bots.Part{{Code: hostile(2900)}, {Code: hostile(2900)}, {Code: hostile(2900)}, {Code: hostile(2900)}, {Code: hostile(2900)}}}, true},
		{"too_many_parts", many, true},
		{"blank_part_skipped", bots.Message{Summary: "s", Parts: []bots.Part{{Spans: []bots.Span{{Text: " "}}}, {Spans: []bots.Span{{Text: "after"}}}}}, false},
		{"exactly_a_section", bots.Message{Summary: "s", Parts: []bots.Part{{Spans: []bots.Span{{Text: strings.Repeat("x", maxSection)}}}}}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			blocks, cut := render(tc.m)
			if cut != tc.cut {
				t.Errorf("cut = %v, want %v", cut, tc.cut)
			}
			checkFitted(t, blocks, cut)
			if last := tc.m.Parts[len(tc.m.Parts)-1]; !cut && last.Code == "" {
				if js, _ := json.Marshal(blocks); !strings.Contains(string(js), last.Spans[0].Text) {
					t.Errorf("an uncut message lost its last part: %s", js)
				}
			}
			if len(tc.m.Buttons) > 0 {
				if _, ok := blocks[len(blocks)-1].(*slack.ActionBlock); !ok {
					t.Errorf("the buttons are not last: %T", blocks[len(blocks)-1])
				}
			}
		})
	}
}

// blocksOf decodes a posted message's blocks.
func blocksOf(t testing.TB, m fakeslack.Message) []slack.Block {
	t.Helper()
	var bs slack.Blocks
	if err := json.Unmarshal(m.Blocks, &bs); err != nil {
		t.Fatal(err)
	}
	return bs.BlockSet
}

// TestLongResultNothingSilentlyCut: a result within the relay's inline size whose
// escaping makes it over 10,000 characters (it is all &, <, > and ```) is posted (the
// strict fake takes it), says it was truncated, and its full text is attached in the
// thread. So does the write_file proposal that wrote it.
func TestLongResultNothingSilentlyCut(t *testing.T) {
	e := newEnv(t)
	contents := strings.Repeat("&&&&&&&&&&&&&&&&<>```\n", 110) // 2,420 bytes; escaped, over 10,000 characters
	if n := slackLen(escapeCode(contents)); n < 10000 {
		t.Fatalf("escaped contents are %d characters, want over 10,000", n)
	}
	e.Script(reply("write_file", map[string]string{"path": "big.md", "contents": contents}),
		reply("read_file", map[string]string{"path": "big.md"}))
	thread := e.startRun("write a big file")
	p := e.proposal(thread, 1)
	checkFitted(t, blocksOf(t, p), true)
	e.click(approver, thread, p, "approve")
	e.decided(thread, p.TS, "Approved* by")
	p2 := e.proposal(thread, 2)
	e.click(approver, thread, p2, "approve")

	var result fakeslack.Message
	e.wait("the read_file result", func(v fakeslack.View) bool {
		for _, m := range v.Messages(channel, thread) {
			if m.Text == "read_file succeeded" {
				result = m
				return true
			}
		}
		return false
	})
	checkFitted(t, blocksOf(t, result), true)
	e.wait("the full texts attached", func(v fakeslack.View) bool {
		proposal, result := false, false
		for _, f := range v.Files() {
			if f.ThreadTS == thread && f.Channel == channel {
				proposal = proposal || strings.Contains(f.Content, "I will write_file <now> & then")
				result = result || strings.Contains(f.Content, strings.TrimSpace(contents))
			}
		}
		return proposal && result
	})
}

// TestSlashRunAckedUnder429: /agent run while chat.postMessage answers 429 with a
// Retry-After longer than Slack's real 3 s ack deadline: the command is acked in time,
// and the thread is posted once the Retry-After has passed.
func TestSlashRunAckedUnder429(t *testing.T) {
	e := newEnv(t)
	e.slack.RateLimitNext("chat.postMessage", 3)
	e.Script(touch("x"))
	env := e.slack.Slash(approver, channel, "/agent", "run touch x")
	if got := e.answer(env); !strings.HasPrefix(got, "Started agent") {
		t.Errorf("run = %q", got)
	}
	e.slack.Wait(0, func(v fakeslack.View) bool {
		d, _ := v.Delivery(env)
		if !d.InTime || d.Acked.Sub(d.Sent) > time.Second {
			t.Errorf("/agent run acked %v after delivery (in time: %v), want at once", d.Acked.Sub(d.Sent), d.InTime)
		}
		calls := v.Calls("chat.postMessage")
		if len(calls) < 2 || calls[0].Status != 429 {
			t.Fatalf("chat.postMessage calls = %+v, want a 429 first", calls)
		}
		if wait := calls[1].At.Sub(calls[0].At); wait < 3*time.Second {
			t.Errorf("retried %v after the 429, before its Retry-After", wait)
		}
		if !d.Acked.Before(calls[1].At) {
			t.Errorf("acked at %v, after the thread was posted at %v", d.Acked, calls[1].At)
		}
		return true
	})
	e.wait("the run's thread", func(v fakeslack.View) bool { return hasText(v.Messages(channel, ""), "Task: touch x") })
}

// TestRateLimitedPostKeepsOrder: a 429 on the post of a result is waited out (its
// Retry-After) inside the call while the thread's outbox holds what follows, so the
// thread still reads proposal, result, next proposal; the click was acked in time.
func TestRateLimitedPostKeepsOrder(t *testing.T) {
	e := newEnv(t)
	e.Script(touch("one"), touch("two"))
	thread := e.startRun("touch two things")
	p := e.proposal(thread, 1)
	e.slack.RateLimitNext("chat.postMessage", 1)
	env := e.click(approver, thread, p, "approve")
	e.proposal(thread, 2)
	e.slack.Wait(0, func(v fakeslack.View) bool {
		if !v.AckedInTime(env) {
			t.Error("the click was not acked in time")
		}
		var order []string
		for _, m := range v.Messages(channel, thread) {
			switch {
			case strings.Contains(m.Text, "Step 1:"), strings.Contains(m.Text, "Step 2:"), strings.Contains(string(m.Blocks), "touched one"):
				order = append(order, m.Text)
			}
		}
		if len(order) != 3 || !strings.Contains(order[0], "Step 1:") || !strings.Contains(order[2], "Step 2:") {
			t.Errorf("thread order = %q, want step 1, its result, step 2", order)
		}
		limited := 0
		for _, c := range v.Calls("chat.postMessage") {
			if c.Status == 429 {
				limited++
			}
		}
		if limited != 1 {
			t.Errorf("%d posts rate limited, want 1", limited)
		}
		return true
	})
}
