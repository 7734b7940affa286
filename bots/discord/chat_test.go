package discord

import (
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/agentd/agentd/bots"
	"github.com/agentd/agentd/internal/chattest"
	"github.com/agentd/agentd/internal/fakediscord"
)

// TestScenarios runs the scenarios both chat platforms share on Discord.
func TestScenarios(t *testing.T) {
	chattest.RunScenarios(t, func(t *testing.T) chattest.Chat { return newChat(t) })
}

// newChat is a harness whose relay can hold messages back.
func newChat(t testing.TB) discordChat {
	e := &env{}
	held, handled := e.ForScenarios(t)
	return discordChat{newEnvWith(t, e), held, handled}
}

// discordChat is the Discord harness as the scenarios drive it.
type discordChat struct {
	*env
	held    *chattest.HoldingRelay
	handled *chattest.HandledRelay
}

var discordUsers = map[chattest.User]fakediscord.User{chattest.Approver: uAlice, chattest.GroupApprover: uCarol, chattest.Stranger: uBob,
	chattest.OtherBot: uRobot}

func (c discordChat) Daemon() *chattest.Daemon      { return &c.env.Daemon }
func (c discordChat) Platform() string              { return Platform }
func (c discordChat) Channel() string               { return eChannel }
func (c discordChat) UserID(u chattest.User) string { return discordUsers[u].ID }
func (c discordChat) StartRun(task string) string   { return c.startRun(task) }
func (c discordChat) Restart()                      { c.restart() }
func (c discordChat) Say(u chattest.User, thread, text string) string {
	return c.say(discordUsers[u], cmp.Or(thread, eChannel), text).ID
}

func (c discordChat) LateReply(u chattest.User, thread string, m chattest.Msg, text string) (string, func()) {
	deliver := c.held.Hold(text)
	return c.replyTo(discordUsers[u], m.Raw.(fakediscord.Message), text).ID, deliver
}

// replyTo posts text from u in the channel as a reply to m, with Discord's default ping.
func (e *env) replyTo(u fakediscord.User, m fakediscord.Message, text string) fakediscord.Message {
	e.t.Helper()
	r, err := e.fake.PostMessage(fakediscord.Message{ChannelID: m.ChannelID, Author: u, Content: text,
		MessageReference: &fakediscord.MessageReference{MessageID: m.ID, ChannelID: m.ChannelID}})
	if err != nil {
		e.t.Fatal(err)
	}
	return r
}

// TaskReply replies in the channel to the task message, with Discord's default ping.
func (c discordChat) TaskReply(u chattest.User, root chattest.Msg, text string) string {
	return c.replyTo(discordUsers[u], root.Raw.(fakediscord.Message), text).ID
}

func (c discordChat) BotMention() string { return "<@" + c.fake.BotUser().ID + ">" }

func (c discordChat) Edit(u chattest.User, _, id, text string) {
	c.t.Helper()
	if _, err := c.fake.EditMessage(id, discordUsers[u], text); err != nil {
		c.t.Fatal(err)
	}
	c.handled.Handled(c.t, id, true)
}

// Answered counts u's notes and the bot's replies to u's messages.
func (c discordChat) Answered(u chattest.User, text string) int {
	n := chattest.Count(c.NotesTo(u), text)
	for _, m := range c.fake.AllMessages() {
		if m.Author.ID != c.fake.BotUser().ID || m.MessageReference == nil || !strings.Contains(m.Content, text) {
			continue
		}
		if to, ok := c.fake.Message(m.MessageReference.MessageID); ok && to.Author.ID == discordUsers[u].ID {
			n++
		}
	}
	return n
}
func (c discordChat) Wait(what string, cond func() bool)                 { c.t.Helper(); c.wait(what, cond) }
func (c discordChat) Decided(thread string, m chattest.Msg, text string) { c.decided(m.ID, text) }

func (c discordChat) StartTeam(workflow, task string) string {
	c.teamCommand(uAlice, "file="+workflow, "task="+task)
	return c.teamThread(workflow)
}

func (c discordChat) RoleProposal(thread, role string, step int) chattest.Msg {
	m := c.roleProposal(thread, role, step)
	return chattest.Msg{ID: m.ID, Raw: m}
}

func (c discordChat) Team(u chattest.User, file, task string) string {
	return c.teamAnswer(u, "file="+file, "task="+task)
}
func (c discordChat) StopTeam(u chattest.User, id string) string { return c.teamAnswer(u, "stop="+id) }

// teamAnswer runs /agent team with opts (name=value) and returns what the bot answered.
func (c discordChat) teamAnswer(u chattest.User, opts ...string) string {
	c.t.Helper()
	in := c.teamCommand(discordUsers[u], opts...)
	c.interacted(u, in)
	c.wait("the answer to /agent team", func() bool { return c.original(in, "") })
	return c.originalText(in)
}

func (c discordChat) Proposal(thread string, step int) chattest.Msg {
	m := c.proposal(thread, step)
	return chattest.Msg{ID: m.ID, Raw: m}
}

func (c discordChat) Text(_ string, m chattest.Msg) string {
	c.t.Helper()
	shown := m.Raw.(fakediscord.Message)
	checkContent(c.t, shown.Content)
	if shown.MentionEveryone || len(shown.Mentions) != 0 {
		c.t.Errorf("the message pinged: %+v", shown)
	}
	return shown.Content
}
func (c discordChat) Code(text string) string    { return codeBlock(text) }
func (c discordChat) Escaped(text string) string { return Escape(text) }

func (c discordChat) Cut(_ string, m chattest.Msg) string {
	c.t.Helper()
	shown := m.Raw.(fakediscord.Message)
	// A decided message names its decider by a mention that pings nobody.
	content := shown.Content
	for _, u := range discordUsers {
		content = strings.ReplaceAll(content, " by <@"+u.ID+">", " by")
	}
	checkContent(c.t, content)
	if len(shown.Mentions) != 0 {
		c.t.Errorf("the cut message pinged %v", shown.Mentions)
	}
	if !strings.Contains(shown.Content, "truncated — full text attached as message.txt") || len(shown.Attachments) != 1 {
		c.t.Errorf("the cut message does not say so, or has no file (%d):\n%s", len(shown.Attachments), shown.Content)
	}
	if !strings.Contains(shown.Content, Escape("more bytes)")) && !strings.Contains(shown.Content, "truncated") {
		c.t.Errorf("the arguments were cut without a word:\n%s", shown.Content)
	}
	return shown.Content
}

// Refused is each call the fake refused; a GET of a message id as a channel is how the
// bot tells threads apart, so refused GETs are not counted.
func (c discordChat) Refused() []string {
	var out []string
	for _, call := range c.fake.Calls() {
		if call.Method != "GET" && call.Status >= 400 {
			out = append(out, fmt.Sprintf("%s %s: %d (code %d)", call.Method, call.Path, call.Status, call.Code))
		}
	}
	return out
}

func (c discordChat) Find(thread, text string) chattest.Msg {
	c.t.Helper()
	var got fakediscord.Message
	c.wait("a message with "+text, func() bool {
		for _, m := range c.fake.Messages(cmp.Or(thread, eChannel)) {
			if strings.Contains(m.Content, text) {
				got = m
				return true
			}
		}
		return false
	})
	return chattest.Msg{ID: got.ID, Raw: got}
}

func (c discordChat) Files(thread string) map[string]string {
	out := map[string]string{}
	for _, m := range c.fake.Messages(thread) {
		for _, a := range m.Attachments {
			out[a.Filename] = string(a.Data)
		}
	}
	return out
}

// interacted keeps what u did, for NotesTo.
func (c discordChat) interacted(u chattest.User, in fakediscord.Interaction) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ins == nil {
		c.ins = map[string][]fakediscord.Interaction{}
	}
	c.ins[discordUsers[u].ID] = append(c.ins[discordUsers[u].ID], in)
}

// Click presses m's button; once the bot took the buttons off (m was decided), it is a
// click from a client still showing m as it was.
func (c discordChat) Click(u chattest.User, thread string, m chattest.Msg, action string) {
	c.t.Helper()
	msg := m.Raw.(fakediscord.Message)
	id := customID(c.t, msg, Action(action))
	in, err := c.fake.Click(thread, m.ID, discordUsers[u], id)
	if now, _ := c.fake.Message(m.ID); err != nil && len(now.Components) == 0 {
		in, err = c.fake.Interact(fakediscord.Interaction{Type: fakediscord.InteractionMessageComponent, ChannelID: thread, Message: &msg,
			Data: fakediscord.ComponentData{CustomID: id, ComponentType: 2}}, discordUsers[u])
	}
	if err != nil {
		c.t.Fatal(err)
	}
	c.interacted(u, in)
}

func (c discordChat) ForgeClick(u chattest.User, thread string, on, from chattest.Msg) {
	c.ForgeRef(u, thread, on, bots.ActionApprove, c.RefOf(from))
}

// Feedback opens the modal (answered with type 9) and submits it.
func (c discordChat) Feedback(u chattest.User, thread string, m chattest.Msg, text string) {
	opened := c.click(discordUsers[u], thread, m.Raw.(fakediscord.Message), ActionFeedback)
	c.interacted(u, opened)
	c.wait("the modal", func() bool { return c.fake.InteractionResponse(opened.ID).Type == 9 })
	in, err := c.fake.SubmitModal(opened, discordUsers[u], map[string]string{feedbackInputID: text})
	if err != nil {
		c.t.Fatal(err)
	}
	c.interacted(u, in)
}

// Redeliver has the gateway replay what it sent on the bot's next resume, and drops the
// connection.
func (c discordChat) Redeliver(id string) {
	resumed := c.resumes()
	c.fake.ReplayOnResume(64)
	c.settle()
	c.fake.Drop()
	c.wait("a resumed connection", func() bool { return c.resumes() > resumed })
}

// Command runs /agent with text's first word as the subcommand, the words after it as
// its options in the order Commands declares them (the last one declared takes the rest
// of the words), and each "--NAME VALUE" after those as option NAME.
func (c discordChat) Command(u chattest.User, text string) string {
	c.t.Helper()
	f := strings.Fields(text)
	opt := fakediscord.CommandOption{Type: 1, Name: f[0]}
	var names []string
	for _, sub := range Commands()[0].Options {
		if sub.Name == f[0] {
			for _, o := range sub.Options {
				names = append(names, o.Name)
			}
		}
	}
	i := 1
	for ; i < len(f) && i <= len(names) && !strings.HasPrefix(f[i], "--"); i++ {
		v := f[i]
		if i == len(names) { // the last option takes the words left before any --NAME
			for ; i+1 < len(f) && !strings.HasPrefix(f[i+1], "--"); i++ {
				v += " " + f[i+1]
			}
		}
		opt.Options = append(opt.Options, fakediscord.CommandOption{Type: 3, Name: names[len(opt.Options)], Value: v})
	}
	for ; i+1 < len(f); i += 2 {
		opt.Options = append(opt.Options, fakediscord.CommandOption{Type: 3, Name: strings.TrimPrefix(f[i], "--"), Value: f[i+1]})
	}
	in, err := c.fake.Command(eChannel, discordUsers[u], "agent", opt)
	if err != nil {
		c.t.Fatal(err)
	}
	c.interacted(u, in)
	c.wait("the answer to /agent "+text, func() bool { return c.original(in, "") })
	return c.originalText(in)
}

// originalText is every text the bot wrote into the interaction's response: the
// content of each response and edit, one a line.
func (e *env) originalText(in fakediscord.Interaction) string {
	var b strings.Builder
	for _, c := range e.fake.Calls() {
		if strings.Contains(c.Path, in.Token) || strings.Contains(c.Path, in.ID+"/") {
			var body struct {
				Content string
				Data    struct{ Content string }
			}
			json.Unmarshal(c.Body, &body)
			b.WriteString(body.Content + body.Data.Content + "\n")
		}
	}
	return b.String()
}

func (c discordChat) Posted(thread string) []string {
	return contentsOf(c.fake.Messages(cmp.Or(thread, eChannel)))
}

func (c discordChat) NotesTo(u chattest.User) []string {
	c.mu.Lock()
	ins := append([]fakediscord.Interaction(nil), c.ins[discordUsers[u].ID]...)
	c.mu.Unlock()
	var out []string
	for _, in := range ins {
		out = append(out, c.ephemerals(in)...)
	}
	return out
}

// RepliesTo is the bot's replies to the message.
func (c discordChat) RepliesTo(_ chattest.User, thread, id string) []string {
	var out []string
	for _, m := range c.fake.Messages(thread) {
		if m.Author.ID == c.fake.BotUser().ID && m.MessageReference != nil && m.MessageReference.MessageID == id {
			out = append(out, m.Content)
		}
	}
	return out
}

func (c discordChat) Shown(verb string, by chattest.User) string {
	if by == chattest.Anyone {
		return verb + "** by"
	}
	return verb + "** by <@" + discordUsers[by].ID + ">"
}

func (c discordChat) Asks(thread string, m chattest.Msg) bool {
	now, _ := c.fake.Message(m.ID)
	return len(now.Components) > 0
}

func (c discordChat) Hold(text string) func() { return c.held.Hold(text) }

// ClicksAnswered waits for u's button clicks to be answered: by a deferred update (6),
// a feedback button's by its dialog (9).
func (c discordChat) ClicksAnswered(u chattest.User) {
	c.t.Helper()
	c.mu.Lock()
	ins := slices.Clone(c.ins[discordUsers[u].ID])
	c.mu.Unlock()
	for _, in := range ins {
		if in.Type != fakediscord.InteractionMessageComponent {
			continue
		}
		c.wait("the click answered", func() bool { return c.fake.InteractionResponse(in.ID).Responded })
		want := fakediscord.CallbackDeferredUpdateMessage
		if id, _ := ParseCustomID(customIDOf(in)); id.Action == ActionFeedback {
			want = fakediscord.CallbackModal
		}
		if r := c.fake.InteractionResponse(in.ID); r.Type != want {
			c.t.Errorf("the click %s was answered with %+v, want type %d", customIDOf(in), r, want)
		}
	}
}

// Drop drops the gateway connection; the fake holds what happens meanwhile until the
// bot resumes.
func (c discordChat) Drop() func() {
	resumes := c.resumes()
	c.fake.Drop()
	return func() {
		c.wait("a resumed connection", func() bool { return c.resumes() > resumes && c.fake.Connections() == 1 })
	}
}

func (c discordChat) AskReconnect() {
	c.settle()
	resumes := c.resumes()
	c.fake.RequestReconnect()
	c.wait("another connection", func() bool { return c.resumes() > resumes && c.fake.Connections() == 1 })
}

func (c discordChat) MentionUnserved(u chattest.User, text string) {
	c.say(discordUsers[u], eOther, c.BotMention()+" "+text)
}

// UnservedCalls is each REST call whose path names the unserved channel.
func (c discordChat) UnservedCalls() []string {
	var out []string
	for _, call := range c.fake.Calls() {
		if strings.Contains(call.Path, eOther) {
			out = append(out, call.Method+" "+call.Path)
		}
	}
	return out
}

func (c discordChat) SayDirect(u chattest.User, text string) { c.say(discordUsers[u], eDM, text) }
func (c discordChat) DirectPosted() []string                 { return contentsOf(c.fake.Messages(eDM)) }

// Buttons is the action of each button on m whose custom ID parses.
func (c discordChat) Buttons(m chattest.Msg) []string {
	var out []string
	for _, b := range buttonIDs(m.Raw.(fakediscord.Message)) {
		if id, err := ParseCustomID(b); err == nil {
			out = append(out, string(id.Action))
		}
	}
	return out
}

func (c discordChat) Tokens() []string { return []string{c.fake.Token()} }

// customIDOf is the custom ID a component interaction carries.
func customIDOf(in fakediscord.Interaction) string {
	d, _ := in.Data.(fakediscord.ComponentData)
	return d.CustomID
}

// RefOf is the approve button's custom ID: Discord's carry no agent.
func (c discordChat) RefOf(m chattest.Msg) bots.Ref {
	id, err := ParseCustomID(customID(c.t, m.Raw.(fakediscord.Message), ActionApprove))
	if err != nil {
		c.t.Fatal(err)
	}
	return bots.Ref{ProposalID: id.ProposalID, Hash: id.Hash, Count: id.N}
}

// ForgeRef sends ref as the button's custom ID, past the fake's check that a click is
// one of the message's buttons.
func (c discordChat) ForgeRef(u chattest.User, thread string, m chattest.Msg, action string, ref bots.Ref) {
	msg := m.Raw.(fakediscord.Message)
	id := CustomID{Action: Action(action), ProposalID: ref.ProposalID, N: ref.Count, Hash: ref.Hash}.String()
	in, err := c.fake.Interact(fakediscord.Interaction{Type: fakediscord.InteractionMessageComponent, ChannelID: thread, Message: &msg,
		Data: fakediscord.ComponentData{CustomID: id, ComponentType: 2}}, discordUsers[u])
	if err != nil {
		c.t.Fatal(err)
	}
	c.interacted(u, in)
}
