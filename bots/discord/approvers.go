package discord

import (
	"slices"

	"github.com/bwmarrin/discordgo"
)

// Approvers lists who may decide on proposals in a channel or for an agent: Discord user
// IDs and role IDs. An empty list lets nobody decide, so a missing config fails closed.
type Approvers struct {
	Users []string
	Roles []string
}

// Actor is the person behind an interaction or a message.
type Actor struct {
	UserID string
	Name   string
	Roles  []string // empty outside guilds (DMs carry no member)
	Bot    bool
}

// Allows reports whether a may decide: listed by user ID, or holding a listed role.
func (a Approvers) Allows(who Actor) bool {
	if who.UserID == "" || who.Bot {
		return false
	}
	if slices.Contains(a.Users, who.UserID) {
		return true
	}
	for _, r := range who.Roles {
		if slices.Contains(a.Roles, r) {
			return true
		}
	}
	return false
}

// InteractionActor is who clicked or typed a command: the member in a guild, the user in a DM.
func InteractionActor(i *discordgo.Interaction) Actor {
	switch {
	case i.Member != nil && i.Member.User != nil:
		return Actor{UserID: i.Member.User.ID, Name: displayName(i.Member.User, i.Member.Nick), Roles: i.Member.Roles, Bot: i.Member.User.Bot}
	case i.User != nil:
		return Actor{UserID: i.User.ID, Name: displayName(i.User, ""), Bot: i.User.Bot}
	}
	return Actor{}
}

// MessageActor is who wrote a message; guild messages carry the author's roles in Member.
func MessageActor(m *discordgo.Message) Actor {
	if m.Author == nil {
		return Actor{}
	}
	a := Actor{UserID: m.Author.ID, Name: displayName(m.Author, ""), Bot: m.Author.Bot}
	if m.Member != nil {
		a.Roles = m.Member.Roles
		a.Name = displayName(m.Author, m.Member.Nick)
	}
	return a
}

func displayName(u *discordgo.User, nick string) string {
	switch {
	case nick != "":
		return nick
	case u.GlobalName != "":
		return u.GlobalName
	}
	return u.Username
}
