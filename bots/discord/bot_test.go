package discord

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/bwmarrin/discordgo"

	"github.com/agentd/agentd/bots"
	"github.com/agentd/agentd/internal/chattest"
	"github.com/agentd/agentd/internal/fakediscord"
)

// A mention's run gets a public thread under the channel, on a gateway opened with the
// declared intents. (The run itself is the mention_starts_a_run_approved_by_a_click
// scenario.)
func TestMentionRunsInAPublicThread(t *testing.T) {
	e := newEnv(t)
	thread, _ := e.touchRun("touch", "x")
	if ch, ok := e.fake.Channel(thread); !ok || ch.ParentID != eChannel || ch.Type != fakediscord.ChannelPublicThread {
		t.Fatalf("thread = %+v, %v", ch, ok)
	}
	if got := e.fake.Intents(); got != int(Intents) {
		t.Errorf("intents = %d, want %d", got, Intents)
	}
}

func TestTypedDecisions(t *testing.T) {
	e := newEnv(t)
	e.Script(touch("a"), touch("b"), touch("c"), touch("d"))
	thread := e.startRun("touch")
	p := e.proposal(thread, 1)
	chattest.Drain()
	e.say(uCarol, thread, "y -2") // an approver by role
	e.decided(p.ID, "Approved ×2** by <@"+uCarol.ID+">")
	chattest.TouchedInOrder(e.t, "a", "b")
	p3 := e.proposal(thread, 3)
	e.say(uAlice, thread, "touch e instead")
	e.decided(p3.ID, "Feedback** by <@"+uAlice.ID+">: touch e instead")
	e.modelSaw("touch e instead")
	p4 := e.proposal(thread, 4)
	e.say(uAlice, thread, "n")
	e.decided(p4.ID, "Denied** by <@"+uAlice.ID+">")
	e.wait("the agent to stop", func() bool { return e.agentOf(thread).Pending == nil })
}

// A stranger's click on the feedback button is refused before any dialog opens and
// decides nothing; a group approver's deny then decides the proposal. (The refusals
// every platform gives are the non_approver_refused scenario; a mention in a channel
// the bot does not serve, the unserved_channel_gets_nothing one.)
func TestStrangersDialogRefusedBeforeItOpens(t *testing.T) {
	e := newEnv(t)
	thread, p := e.touchRun("touch x", "x")
	opened := e.click(uBob, thread, p, ActionFeedback)
	e.wait("a refused dialog", func() bool { return len(e.ephemerals(opened)) == 1 })
	a := e.agentOf(thread)
	if a.Pending == nil || e.Decisions(a.Pending.ID) != 0 {
		t.Fatalf("a refused click changed the agent: %+v", a)
	}
	e.click(uCarol, thread, p, ActionDeny)
	e.decided(p.ID, "Denied** by <@"+uCarol.ID+">")
}

// resumes counts RESUME payloads the bot sent.
func (e *env) resumes() int {
	n := 0
	for _, f := range e.fake.Frames() {
		if f.Op == fakediscord.OpResume {
			n++
		}
	}
	return n
}

func TestWatchdogReopensSilentConnection(t *testing.T) {
	e := newEnv(t)
	resumes := e.resumes()
	e.fake.PauseHeartbeatACKs(true)
	e.wait("the watchdog to notice", func() bool { return e.bot.Status().State == bots.StateReconnecting })
	if st := e.bot.Status(); st.Attempt != 1 || !strings.Contains(st.Error, "no heartbeat ACK") {
		t.Errorf("status = %+v", st)
	}
	e.wait("a new connection", func() bool { return e.resumes() > resumes })
	e.fake.PauseHeartbeatACKs(false)
	e.wait("connected again", func() bool { return e.bot.Status().State == bots.StateConnected })
	e.settle()
	// Still serving.
	e.Script(touch("x"))
	thread := e.startRun("touch")
	e.proposal(thread, 1)
}

// /agent run is answered deferred (Discord's "thinking…") and its run gets a thread.
// (What the commands do is the slash_commands_drive_a_run scenario.)
func TestSlashRunDeferredIntoAThread(t *testing.T) {
	e := newEnv(t)
	e.Script(touch("x"))
	in, err := e.fake.Command(eChannel, uAlice, "agent", fakediscord.CommandOption{Type: 1, Name: "run",
		Options: []fakediscord.CommandOption{{Type: 3, Name: "task", Value: "touch from a command"}}})
	if err != nil {
		t.Fatal(err)
	}
	e.wait("the answer", func() bool { return e.original(in, "Started agent") })
	if r := e.fake.InteractionResponse(in.ID); r.Type != 5 {
		t.Errorf("/agent run answered with %+v, want deferred (5)", r)
	}
	e.wait("a thread with the proposal", func() bool {
		for _, c := range e.fake.Calls() {
			if c.Method == "POST" && strings.HasSuffix(c.Path, "/threads") {
				return true
			}
		}
		return false
	})
}

// original reports whether the interaction's response message holds text.
func (e *env) original(in fakediscord.Interaction, text string) bool {
	for _, c := range e.fake.Calls() {
		if c.Method == "PATCH" && strings.Contains(c.Path, in.Token+"/messages/@original") && strings.Contains(string(c.Body), text) {
			return true
		}
	}
	return false
}

func TestLongResultAttachedAfterARateLimit(t *testing.T) {
	e := newEnv(t)
	thread, p := e.touchRun("touch big", "big")
	// Discord's rate limit on the next post is waited out, not lost.
	e.fake.RateLimitNext(fakediscord.Route("POST", "/channels/"+thread+"/messages"), 200*time.Millisecond, false)
	e.click(uAlice, thread, p, ActionApprove)
	e.wait("the output as a file", func() bool {
		for _, m := range e.fake.Messages(thread) {
			for _, a := range m.Attachments {
				if strings.HasSuffix(a.Filename, ".txt") && len(a.Data) > 2000 {
					return true
				}
			}
		}
		return false
	})
	n429 := 0
	for _, c := range e.fake.Calls() {
		if c.Status == 429 {
			n429++
		}
	}
	if n429 != 1 {
		t.Errorf("429s = %d, want 1 (then retried)", n429)
	}
	for _, m := range e.fake.Messages(thread) {
		if Len(m.Content) > MaxContent {
			t.Errorf("a message of %d characters", Len(m.Content))
		}
	}
}

// While Discord answers 503, the thread's posts wait and are retried; once it is back
// they arrive, in order.
func TestPostsRetriedWhileDiscordIsDown(t *testing.T) {
	e := newEnv(t)
	thread, p := e.touchRun("touch", "a")
	inThread := fakediscord.Route("", "/channels/"+thread+"/messages/*")
	posts := fakediscord.Route("POST", "/channels/"+thread+"/messages")
	end := e.fake.FailWith(func(c fakediscord.Call) bool { return inThread(c) || posts(c) }, 503)
	mark := e.fake.CallCount()
	chattest.Drain()
	e.click(uAlice, thread, p, ActionApprove)
	chattest.TouchedInOrder(e.t, "a") // deciding does not wait for Discord
	e.wait("posts failing and retried", func() bool {
		n := 0
		for _, c := range e.fake.Calls()[mark:] {
			if c.Status == 503 {
				n++
			}
		}
		return n >= 4
	})
	if hasText(e.fake.Messages(thread), "touched a") {
		t.Fatal("posted during the outage")
	}
	end()
	e.decided(p.ID, "Approved** by <@"+uAlice.ID+">")
	e.wait("the result and the next proposal", func() bool {
		return hasText(e.fake.Messages(thread), "touched a") && hasText(e.fake.Messages(thread), "Step 2: ")
	})
	var order []string
	for _, m := range e.fake.Messages(thread) {
		switch {
		case strings.Contains(m.Content, "touched a"):
			order = append(order, "result")
		case strings.Contains(m.Content, "Step 2: "):
			order = append(order, "proposal 2")
		}
	}
	if strings.Join(order, ",") != "result,proposal 2" {
		t.Errorf("order after the outage = %v", order)
	}
	if !strings.Contains(e.Logs.String(), "posted after retrying") {
		t.Error("no retry logged")
	}
}

// TestAPIVersionAsDocumented: every REST call and gateway connection the bot makes uses
// the API version discordgo speaks, and the config's documentation names that version.
func TestAPIVersionAsDocumented(t *testing.T) {
	e := newEnv(t)
	e.startRun("say hello")
	v := discordgo.APIVersion
	for _, c := range e.fake.Calls() {
		if c.Version != v {
			t.Errorf("%s %s went to API v%s, want v%s", c.Method, c.Path, c.Version, v)
		}
	}
	if gv := e.fake.GatewayVersions(); len(gv) == 0 || slices.ContainsFunc(gv, func(g string) bool { return g != v }) {
		t.Errorf("gateway connections asked for versions %q, want v%s", gv, v)
	}
	for _, doc := range []string{"../../daemon/config/discord.go", "../../agentd.example.toml"} {
		b, err := os.ReadFile(doc)
		if err != nil {
			t.Fatal(err)
		}
		said := regexp.MustCompile(`api/v([0-9]+)/`).FindAllStringSubmatch(string(b), -1)
		if len(said) == 0 {
			t.Errorf("%s does not say which API version the bot speaks (api/vN/)", doc)
		}
		for _, m := range said {
			if m[1] != v {
				t.Errorf("%s says REST is under api/v%s/; discordgo %s speaks v%s", doc, m[1], discordgo.VERSION, v)
			}
		}
	}
}
