package discord_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/bwmarrin/discordgo"

	"github.com/agentd/agentd/api"
	"github.com/agentd/agentd/bots"
	"github.com/agentd/agentd/bots/discord"
	"github.com/agentd/agentd/internal/fakediscord"
)

// These tests send what the package renders through the real discordgo client to the
// loopback fake, so Discord's own rules (components, modal shape, content limit,
// allowed_mentions) check it. Not parallel: discordgo's endpoints are process-wide.

const (
	guildID   = "100000000000000001"
	channelID = "100000000000000002"
	roleID    = "100000000000000003"
)

var (
	alice = fakediscord.User{ID: "200000000000000001", Username: "alice"} // has the approver role
	bob   = fakediscord.User{ID: "200000000000000002", Username: "bob"}
)

type world struct {
	fake  *fakediscord.Server
	s     *discordgo.Session
	inter chan *discordgo.InteractionCreate
}

func newWorld(t *testing.T) *world {
	t.Helper()
	fake := fakediscord.Start(t, fakediscord.Config{Guilds: []fakediscord.Guild{{
		ID: guildID, Name: "home", Roles: []fakediscord.Role{{ID: roleID, Name: "approver", Permissions: "0"}},
		Channels: []fakediscord.Channel{{ID: channelID, Name: "agents"}},
		Members:  []fakediscord.Member{{User: &alice, Roles: []string{roleID}}, {User: &bob}},
	}}})
	fake.Use(t)
	s, err := discordgo.New("Bot " + fake.Token())
	if err != nil {
		t.Fatal(err)
	}
	s.Identify.Intents = discordgo.IntentsGuilds | discordgo.IntentsGuildMessages | discordgo.IntentMessageContent
	s.LogLevel = -1
	w := &world{fake: fake, s: s, inter: make(chan *discordgo.InteractionCreate, 8)}
	s.AddHandler(func(_ *discordgo.Session, i *discordgo.InteractionCreate) { w.inter <- i })
	if err := s.Open(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		fake.Settle(ctx(t))
		s.Close()
	})
	return w
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return c
}

func (w *world) next(t *testing.T) *discordgo.InteractionCreate {
	t.Helper()
	select {
	case i := <-w.inter:
		return i
	case <-time.After(10 * time.Second):
		t.Fatal("no interaction")
		return nil
	}
}

func TestProposalApprovedFromButton(t *testing.T) {
	w := newWorld(t)
	p := &api.Proposal{ID: "p-00000000beef", Step: 2, Status: api.ProposalPending, Command: "execute_shell",
		Args:     json.RawMessage(`{"command": "echo @everyone <@200000000000000002> ` + "```" + `"}`),
		Thoughts: api.Thoughts{Speak: "@here pinging <@&100000000000000003>"}}
	sent, err := w.s.ChannelMessageSendComplex(channelID, discord.FromMessage(bots.FormatProposal(bots.ProposalView{Proposal: p, ApproveN: 3}, discord.Platform)).Send())
	if err != nil {
		t.Fatal(err)
	}
	stored, _ := w.fake.Message(sent.ID)
	if stored.MentionEveryone || len(stored.Mentions) != 0 || len(stored.MentionRoles) != 0 {
		t.Fatalf("a proposal pinged: everyone=%v users=%v roles=%v", stored.MentionEveryone, stored.Mentions, stored.MentionRoles)
	}

	approvers := discord.Approvers{Roles: []string{roleID}}
	approveN := discord.CustomID{Action: discord.ActionApproveN, ProposalID: p.ID, N: 3}.String()

	// bob is not an approver: his click is refused with an ephemeral note.
	if _, err := w.fake.Click(channelID, sent.ID, bob, approveN); err != nil {
		t.Fatal(err)
	}
	i := w.next(t)
	if approvers.Allows(discord.InteractionActor(i.Interaction)) {
		t.Fatal("bob allowed")
	}
	err = w.s.InteractionRespond(i.Interaction, &discordgo.InteractionResponse{Type: discordgo.InteractionResponseChannelMessageWithSource,
		Data: &discordgo.InteractionResponseData{Content: "You are not an approver here.", Flags: discordgo.MessageFlagsEphemeral}})
	if err != nil {
		t.Fatal(err)
	}

	// alice holds the approver role.
	if _, err := w.fake.Click(channelID, sent.ID, alice, approveN); err != nil {
		t.Fatal(err)
	}
	i = w.next(t)
	actor := discord.InteractionActor(i.Interaction)
	if !approvers.Allows(actor) {
		t.Fatalf("alice refused: %+v", actor)
	}
	id, err := discord.ParseCustomID(i.MessageComponentData().CustomID)
	if err != nil {
		t.Fatal(err)
	}
	req, ok := id.DecideRequest(actor.UserID)
	if !ok || req.Kind != api.DecisionApprove || req.Count != 3 || req.ProposalID != p.ID {
		t.Fatalf("decision = %+v", req)
	}
	d := &api.Decision{ProposalID: p.ID, Kind: req.Kind, Count: req.Count, By: req.By, Source: req.Source}
	if err := w.s.InteractionRespond(i.Interaction, discord.FromMessage(bots.FormatProposal(bots.ProposalView{Proposal: p, Decision: d}, discord.Platform)).Update()); err != nil {
		t.Fatal(err)
	}
	after, _ := w.fake.Message(sent.ID)
	if len(after.Components) != 0 || !strings.Contains(after.Content, "Approved ×3** by <@"+alice.ID+">") || len(after.Mentions) != 0 {
		t.Fatalf("decided message = %q, components %d, mentions %v", after.Content, len(after.Components), after.Mentions)
	}
	// The buttons are gone, so a late click cannot happen; a forged one is refused by parsing.
	if _, err := w.fake.Click(channelID, sent.ID, alice, approveN); err == nil {
		t.Fatal("clicked a removed button")
	}
	if _, err := w.fake.Interact(fakediscord.Interaction{Type: fakediscord.InteractionMessageComponent, ChannelID: channelID,
		Data: fakediscord.ComponentData{CustomID: "agentd:v1:approve_n:p-00000000beef:1000", ComponentType: 2}}, alice); err != nil {
		t.Fatal(err)
	}
	forged := w.next(t)
	var ce *discord.CustomIDError
	if _, err := discord.ParseCustomID(forged.MessageComponentData().CustomID); !errors.As(err, &ce) {
		t.Fatalf("forged custom_id parsed: %v", err)
	}
}

func TestFeedbackThroughModal(t *testing.T) {
	w := newWorld(t)
	p := &api.Proposal{ID: "p-0123456789ab", Step: 7, Status: api.ProposalPending, Command: "a_command_with_a_really_long_name_for_titles", Args: json.RawMessage(`{}`)}
	sent, err := w.s.ChannelMessageSendComplex(channelID, discord.FromMessage(bots.FormatProposal(bots.ProposalView{Proposal: p, ApproveN: 0}, discord.Platform)).Send())
	if err != nil {
		t.Fatal(err)
	}
	opened, err := w.fake.Click(channelID, sent.ID, alice, discord.CustomID{Action: discord.ActionFeedback, ProposalID: p.ID}.String())
	if err != nil {
		t.Fatal(err)
	}
	i := w.next(t)
	if err := w.s.InteractionRespond(i.Interaction, discord.FeedbackModal(p)); err != nil {
		t.Fatalf("the fake refused the modal: %v", err)
	}
	if _, err := w.fake.SubmitModal(opened, alice, map[string]string{"feedback": "look in ./logs first"}); err != nil {
		t.Fatal(err)
	}
	sub := w.next(t)
	req, err := discord.ParseFeedback(sub.ModalSubmitData(), discord.InteractionActor(sub.Interaction).UserID)
	if err != nil {
		t.Fatal(err)
	}
	if req.Kind != api.DecisionFeedback || req.Feedback != "look in ./logs first" || req.ProposalID != p.ID || req.By != alice.ID {
		t.Fatalf("feedback decision = %+v", req)
	}
}

func TestLongTextGoesAsAttachment(t *testing.T) {
	w := newWorld(t)
	output := strings.Repeat("a line of command output\n", 400) // 10,000 characters
	if _, err := w.s.ChannelMessageSend(channelID, output); err == nil {
		t.Fatal("the fake accepted 10,000 characters")
	}
	for name, m := range map[string]discord.Message{
		"fit":      discord.Fit(output, "output.txt"),
		"fit_code": discord.FitCode("**result**", output, "output.txt"),
	} {
		sent, err := w.s.ChannelMessageSendComplex(channelID, m.Send())
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		stored, _ := w.fake.Message(sent.ID)
		if len(stored.Attachments) != 1 || len(stored.Attachments[0].Data) < 5000 {
			t.Fatalf("%s: attachments = %d", name, len(stored.Attachments))
		}
	}
}

// A proposal's long arguments are cut in the message, which says the whole arguments are
// attached: the relay uploads them (bots.ArgsFile) after the post.
func TestLongProposalFitsAndSaysAttached(t *testing.T) {
	w := newWorld(t)
	p := &api.Proposal{ID: "p-0000000000aa", Command: "write_file", Status: api.ProposalPending,
		Args: json.RawMessage(`{"text": "` + strings.Repeat("x", 5000) + `"}`)}
	m := discord.FromMessage(bots.FormatProposal(bots.ProposalView{Proposal: p, ApproveN: 2}, discord.Platform))
	sent, err := w.s.ChannelMessageSendComplex(channelID, m.Send())
	if err != nil {
		t.Fatalf("the fake refused a long proposal: %v", err)
	}
	if !strings.Contains(sent.Content, "attached") {
		t.Errorf("a proposal with cut arguments does not say they are attached:\n%s", sent.Content)
	}
	if len(sent.Components) == 0 {
		t.Error("a pending proposal has no buttons")
	}
}

func TestSlashCommandsRegisterAndParse(t *testing.T) {
	w := newWorld(t)
	if _, err := w.s.ApplicationCommandBulkOverwrite(w.fake.ApplicationID(), guildID, discord.Commands()); err != nil {
		t.Fatalf("the fake refused the command definitions: %v", err)
	}
	for _, c := range []struct {
		opts []fakediscord.CommandOption
		want discord.SlashCommand
	}{
		{[]fakediscord.CommandOption{fakediscord.SubCommand("run", fakediscord.StringOption("task", "tidy the logs"))}, discord.SlashCommand{Sub: "run", Task: "tidy the logs"}},
		{[]fakediscord.CommandOption{fakediscord.SubCommand("pause", fakediscord.StringOption("agent", "walker"))}, discord.SlashCommand{Sub: "pause", Agent: "walker"}},
		{[]fakediscord.CommandOption{fakediscord.SubCommand("list")}, discord.SlashCommand{Sub: "list"}},
	} {
		if _, err := w.fake.Command(channelID, alice, discord.CommandName, c.opts...); err != nil {
			t.Fatal(err)
		}
		got, err := discord.ParseSlash(w.next(t).ApplicationCommandData())
		if err != nil || got != c.want {
			t.Fatalf("ParseSlash = %+v, %v; want %+v", got, err, c.want)
		}
	}
}
