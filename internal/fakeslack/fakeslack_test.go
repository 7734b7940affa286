package fakeslack

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/slack-go/slack"
)

// client is a bare Socket Mode connection that acks only what a test tells it to.
type client struct {
	t *testing.T
	c *websocket.Conn
}

type frame struct {
	Type         string `json:"type"`
	EnvelopeID   string `json:"envelope_id"`
	RetryAttempt int    `json:"retry_attempt"`
	RetryReason  string `json:"retry_reason"`
	Payload      struct {
		EventID string `json:"event_id"`
		Event   struct {
			TS string `json:"ts"`
		} `json:"event"`
	} `json:"payload"`
}

func dial(t *testing.T, f *Fake) *client {
	c, _, err := websocket.DefaultDialer.Dial("ws"+strings.TrimPrefix(f.srv.URL, "http")+"/ws", nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	cl := &client{t, c}
	if fr := cl.next(); fr.Type != "hello" {
		t.Fatalf("first frame = %+v, want hello", fr)
	}
	return cl
}

func (c *client) next() frame {
	c.t.Helper()
	c.c.SetReadDeadline(time.Now().Add(5 * time.Second))
	_, data, err := c.c.ReadMessage()
	if err != nil {
		c.t.Fatal(err)
	}
	var fr frame
	json.Unmarshal(data, &fr)
	return fr
}

func (c *client) ack(id string) {
	c.c.WriteJSON(map[string]string{"envelope_id": id})
}

// TestEventRedeliveredUntilAcked: an events_api envelope not acked within the deadline
// comes again with the same event, retry_attempt + 1 and retry_reason "timeout", at most
// three times; Redeliver sends one again on demand.
func TestEventRedeliveredUntilAcked(t *testing.T) {
	f := NewFake(t, WithAckDeadline(50*time.Millisecond))
	c := dial(t, f)
	env, ts := f.Say("U1", "C1", "channel", "", "y", false)
	first := c.next()
	if first.EnvelopeID != env || first.RetryAttempt != 0 || first.Payload.Event.TS != ts {
		t.Fatalf("first delivery = %+v", first)
	}
	for attempt := 1; attempt <= maxRetries; attempt++ {
		fr := c.next()
		if fr.RetryAttempt != attempt || fr.RetryReason != "timeout" || fr.Payload.EventID != first.Payload.EventID || fr.Payload.Event.TS != ts || fr.EnvelopeID == env {
			t.Fatalf("retry %d = %+v", attempt, fr)
		}
	}
	// No fourth retry.
	c.c.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
	if _, data, err := c.c.ReadMessage(); err == nil {
		t.Fatalf("a fourth retry: %s", data)
	}
	ok := f.Wait(time.Second, func(v View) bool {
		d, _ := v.Delivery(env)
		return d.TimedOut && d.RetriedBy != "" && !v.AckedInTime(env)
	})
	if !ok {
		t.Error("the first delivery is not recorded as timed out and retried")
	}

	// Acked in time: no retry.
	c2 := dial(t, f)
	env2, _ := f.Say("U1", "C1", "channel", "", "n", false)
	fr := c2.next()
	c2.ack(fr.EnvelopeID)
	if !f.Wait(time.Second, func(v View) bool { return v.AckedInTime(env2) }) {
		t.Fatal("an ack in time not recorded")
	}
	again := f.Redeliver(env2, "reconnect")
	if fr := c2.next(); fr.EnvelopeID != again || fr.RetryAttempt != 1 || fr.RetryReason != "reconnect" {
		t.Fatalf("redelivery = %+v", fr)
	}
}

// TestLateSlashAckRecorded: a slash command acked after the deadline counts as failed
// (the person saw operation_timeout) and is not sent again.
func TestLateSlashAckRecorded(t *testing.T) {
	f := NewFake(t, WithAckDeadline(50*time.Millisecond))
	c := dial(t, f)
	env := f.Slash("U1", "C1", "/agent", "list")
	fr := c.next()
	if !f.Wait(2*time.Second, func(v View) bool { d, _ := v.Delivery(env); return d.TimedOut }) {
		t.Fatal("the deadline never passed")
	}
	c.ack(fr.EnvelopeID)
	f.Wait(2*time.Second, func(v View) bool { _, ok := v.Acked(env); return ok })
	f.Wait(0, func(v View) bool {
		if d, _ := v.Delivery(env); d.InTime || d.Acked.IsZero() || d.RetriedBy != "" {
			t.Errorf("late slash ack = %+v", d)
		}
		return true
	})
}

func api(f *Fake) *slack.Client {
	return slack.New(f.BotToken, slack.OptionAPIURL(f.APIURL()))
}

// TestBlockKitLimits: posts over Slack's limits are refused with Slack's errors.
func TestBlockKitLimits(t *testing.T) {
	f := NewFake(t)
	section := func(n int) slack.Block {
		return slack.NewSectionBlock(slack.NewTextBlockObject(slack.MarkdownType, strings.Repeat("a", n), false, false), nil, nil)
	}
	button := func(id, value string) slack.BlockElement {
		return slack.NewButtonBlockElement(id, value, slack.NewTextBlockObject(slack.PlainTextType, "ok", false, false))
	}
	many := func(n int, b func(i int) slack.Block) []slack.Block {
		var out []slack.Block
		for i := range n {
			out = append(out, b(i))
		}
		return out
	}
	var buttons []slack.BlockElement
	for range 26 {
		buttons = append(buttons, button("a", "v"))
	}
	for _, tc := range []struct {
		name    string
		text    string
		blocks  []slack.Block
		want    string
		message string
	}{
		{"fits", "hi", []slack.Block{section(3000)}, "", ""},
		{"section_too_long", "hi", []slack.Block{section(3001)}, "invalid_blocks", "[ERROR] must be less than 3001 characters [json-pointer:/blocks/0/text/text]"},
		{"emoji_count_twice", "hi", []slack.Block{slack.NewSectionBlock(slack.NewTextBlockObject(slack.MarkdownType, strings.Repeat("😀", 1501), false, false), nil, nil)}, "invalid_blocks", "/blocks/0/text/text"},
		{"empty_section", "hi", []slack.Block{section(0)}, "invalid_blocks", "must be more than 0 characters"},
		{"too_many_blocks", "hi", many(51, func(int) slack.Block { return section(1) }), "invalid_blocks", "[ERROR] no more than 50 items allowed [json-pointer:/blocks]"},
		{"too_many_buttons", "hi", []slack.Block{slack.NewActionBlock("x", buttons...)}, "invalid_blocks", "no more than 25 items allowed [json-pointer:/blocks/0/elements]"},
		{"button_value_too_long", "hi", []slack.Block{slack.NewActionBlock("x", button("a", strings.Repeat("v", 2001)))}, "invalid_blocks", "/blocks/0/elements/0/value"},
		{"action_id_too_long", "hi", []slack.Block{slack.NewActionBlock("x", button(strings.Repeat("a", 256), "v"))}, "invalid_blocks", "/blocks/0/elements/0/action_id"},
		{"text_too_long", strings.Repeat("a", 40001), nil, "msg_too_long", ""},
		{"blocks_too_long_in_all", "hi", many(5, func(int) slack.Block { return section(3000) }), "msg_blocks_too_long", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := api(f).PostMessage("C1", slack.MsgOptionText(tc.text, false), slack.MsgOptionBlocks(tc.blocks...))
			if tc.want == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			var se slack.SlackErrorResponse
			if !errors.As(err, &se) || se.Err != tc.want {
				t.Fatalf("err = %v, want %s", err, tc.want)
			}
			if tc.message != "" && !strings.Contains(strings.Join(se.ResponseMetadata.Messages, "\n"), tc.message) {
				t.Errorf("messages = %q, want %q", se.ResponseMetadata.Messages, tc.message)
			}
		})
	}
}

// TestRateLimitAndPreviews: RateLimitNext answers 429 with Retry-After once; previews
// are on unless a post turns them off, and chat.update keeps the post's.
func TestRateLimitAndPreviews(t *testing.T) {
	f := NewFake(t)
	f.RateLimitNext("chat.postMessage", 7)
	_, _, err := api(f).PostMessage("C1", slack.MsgOptionText("hi", false))
	var rl *slack.RateLimitedError
	if !errors.As(err, &rl) || rl.RetryAfter != 7*time.Second {
		t.Fatalf("err = %v, want a 429 with Retry-After 7", err)
	}
	_, plain, err := api(f).PostMessage("C1", slack.MsgOptionText("https://example.test/x", false))
	if err != nil {
		t.Fatal(err)
	}
	_, quiet, _ := api(f).PostMessage("C1", slack.MsgOptionText("hi", false), slack.MsgOptionDisableLinkUnfurl(), slack.MsgOptionDisableMediaUnfurl())
	if _, _, _, err := api(f).UpdateMessage("C1", quiet, slack.MsgOptionText("https://example.test/y", false)); err != nil {
		t.Fatal(err)
	}
	f.Wait(0, func(v View) bool {
		if c := v.Calls("chat.postMessage"); len(c) != 3 || c[0].Status != 429 || c[1].Status != 200 {
			t.Errorf("calls = %+v", c)
		}
		for _, m := range v.Messages("C1", plain) {
			if !m.UnfurlLinks || !m.UnfurlMedia {
				t.Errorf("a post without unfurl flags: %+v, want previews on (Slack's default)", m)
			}
		}
		for _, m := range v.Messages("C1", quiet) {
			if m.UnfurlLinks || m.UnfurlMedia || m.Updates != 1 {
				t.Errorf("an updated quiet post = %+v, want previews still off", m)
			}
		}
		return true
	})
}

// TestResponseURLTakesFiveAnswers: a response_url takes five answers, then refuses.
func TestResponseURLTakesFiveAnswers(t *testing.T) {
	f := NewFake(t)
	env := f.Slash("U1", "C1", "/agent", "list")
	var url string
	f.Wait(0, func(v View) bool { url = f.envelopes[env].payload.(obj)["response_url"].(string); return true })
	for i := range 6 {
		err := slack.PostWebhookContext(context.Background(), url, &slack.WebhookMessage{Text: "answer"})
		if (err == nil) != (i < 5) {
			t.Fatalf("answer %d: err = %v", i+1, err)
		}
	}
	f.Wait(0, func(v View) bool {
		rs := v.Responses(env)
		if len(rs) != 5 || rs[0].ResponseType != "ephemeral" || !rs[0].UnfurlLinks || rs[0].Channel != "C1" {
			t.Errorf("responses = %+v", rs)
		}
		return true
	})
}
