package slack

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/agentd/agentd/api"
	"github.com/agentd/agentd/bots"
	"github.com/agentd/agentd/internal/fakeslack"
	"github.com/agentd/agentd/internal/testutil"
)

// recorder is a Relay that keeps what the bot hands it.
type recorder struct {
	mu       sync.Mutex
	messages []bots.Incoming
	clicks   []bots.Click
}

func (r *recorder) OnMessage(_ context.Context, in bots.Incoming) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.messages = append(r.messages, in)
}

func (r *recorder) OnClick(_ context.Context, c bots.Click) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.clicks = append(r.clicks, c)
}

func (r *recorder) OnFeedback(context.Context, string, bots.Where, bots.User, bots.Ref, string) {}
func (r *recorder) OnCommand(context.Context, string, bots.Where, bots.User, string) string {
	return ""
}

func (r *recorder) got() ([]bots.Incoming, []bots.Click) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]bots.Incoming(nil), r.messages...), append([]bots.Click(nil), r.clicks...)
}

// runBot runs a Bot handing what it gets to rec, against f, until the test ends.
func runBot(t *testing.T, f *fakeslack.Fake, rec Relay) *Bot {
	b, err := New(Options{BotToken: f.BotToken, AppToken: f.AppToken, APIURL: f.APIURL(), Relay: rec,
		Backoff: func(int) time.Duration { return 50 * time.Millisecond }})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); b.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	if !f.Wait(5*time.Second, func(v fakeslack.View) bool { return v.Connected() }) {
		t.Fatal("the bot never connected")
	}
	return b
}

// TestContractIDs: a message's ID is its ts and it has no ReplyTo (Slack has no reply
// references); a click's ID is its action_ts with the message, its Message the clicked
// message's ts, and the Ref its button's value (hash included). A redelivered message or
// click carries the same IDs, so the relay can apply it once.
func TestContractIDs(t *testing.T) {
	f := fakeslack.NewFake(t)
	rec := &recorder{}
	runBot(t, f, rec)
	ref := bots.Ref{AgentID: "a-1", ProposalID: "p-1", Hash: "0123456789abcdef"}
	envSay, ts := f.Say(approver, channel, "channel", "1700000000.000001", "y -3", false)
	envClick := f.Click(approver, channel, "1700000000.000001", "1700000000.000005")("agentd_approve", bots.EncodeRef(ref))
	if !testutil.Wait(5*time.Second, func() bool { m, c := rec.got(); return len(m) == 1 && len(c) == 1 }) {
		t.Fatal("the message and the click never reached the relay")
	}
	f.Redeliver(envSay, "timeout")
	f.Redeliver(envClick, "timeout")
	if !testutil.Wait(5*time.Second, func() bool { m, c := rec.got(); return len(m) == 2 && len(c) == 2 }) {
		t.Fatal("the redeliveries never reached the relay")
	}
	msgs, clicks := rec.got()
	for _, m := range msgs {
		if m.ID != ts || m.ReplyTo != "" || m.Where.Thread != "1700000000.000001" {
			t.Errorf("message = %+v, want ID %s and no ReplyTo", m, ts)
		}
	}
	for _, c := range clicks {
		actionTS, msg, ok := strings.Cut(c.ID, "/")
		if !ok || actionTS == "" || msg != "1700000000.000005" || c.Message != "1700000000.000005" || c.Ref != ref {
			t.Errorf("click = %+v", c)
		}
	}
	if clicks[0].ID != clicks[1].ID {
		t.Errorf("a redelivered click has ID %q, the first %q", clicks[1].ID, clicks[0].ID)
	}
	// slack-go writes an ack from its own goroutine: it may land a moment after the relay
	// saw the envelope. Whether it was in time is the fake's to say once it landed.
	f.Wait(5*time.Second, func(v fakeslack.View) bool {
		for _, d := range v.Deliveries() {
			if d.Acked.IsZero() && !d.TimedOut {
				return false
			}
		}
		return true
	})
	f.Wait(0, func(v fakeslack.View) bool {
		for _, d := range v.Deliveries() {
			if !d.InTime {
				t.Errorf("envelope %+v not acked in time", d)
			}
		}
		return true
	})
}

// TestFeedbackDialogWithinDaemonCap: the feedback input's max_length lets no text
// through that the daemon's byte cap would refuse, and Slack's client holds a person
// to it.
func TestFeedbackDialogWithinDaemonCap(t *testing.T) {
	if feedbackMaxLength*utf8.UTFMax > api.MaxTextBytes || feedbackMaxLength > fakeslack.MaxInputLength {
		t.Fatalf("max_length %d: %d bytes at worst, the daemon takes %d", feedbackMaxLength, feedbackMaxLength*utf8.UTFMax, api.MaxTextBytes)
	}
	f := fakeslack.NewFake(t)
	b := runBot(t, f, &recorder{})
	if err := b.OpenFeedback(context.Background(), "trig-1\nT\nC1\n1700000000.000001", bots.Ref{AgentID: "a-1", ProposalID: "p-1"}, "Feedback on step 1"); err != nil {
		t.Fatal(err)
	}
	var view json.RawMessage
	f.Wait(0, func(v fakeslack.View) bool { view = v.Views()[0]; return true })
	if !strings.Contains(string(view), `"max_length":2000`) {
		t.Errorf("view = %s, want max_length 2000", view)
	}
	longest := strings.Repeat("😀", feedbackMaxLength/2) // 4 bytes and 2 characters each
	if f.Submit(approver, view, feedbackBlock, feedbackInput, longest) == "" {
		t.Error("the longest feedback the dialog takes was refused")
	}
	if f.Submit(approver, view, feedbackBlock, feedbackInput, longest+"x") != "" {
		t.Error("feedback over max_length was sent")
	}
	if len(longest) > api.MaxTextBytes {
		t.Errorf("the longest feedback is %d bytes, over the daemon's %d", len(longest), api.MaxTextBytes)
	}
}
