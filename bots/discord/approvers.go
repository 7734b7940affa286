package discord

import (
	"github.com/bwmarrin/discordgo"
)

// Actor is the person behind an interaction or a message.
type Actor struct {
	UserID string
	Name   string
	Roles  []string // empty outside guilds (DMs carry no member)
	Bot    bool
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
