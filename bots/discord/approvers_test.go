package discord

import (
	"testing"

	"github.com/bwmarrin/discordgo"
)

func TestApproversAllows(t *testing.T) {
	a := Approvers{Users: []string{"1001"}, Roles: []string{"9001"}}
	cases := []struct {
		name string
		a    Approvers
		who  Actor
		want bool
	}{
		{"listed_user", a, Actor{UserID: "1001"}, true},
		{"listed_role", a, Actor{UserID: "1002", Roles: []string{"9000", "9001"}}, true},
		{"neither", a, Actor{UserID: "1002", Roles: []string{"9000"}}, false},
		{"dm_without_roles", a, Actor{UserID: "1002"}, false},
		{"bot_even_if_listed", a, Actor{UserID: "1001", Bot: true}, false},
		{"no_user", a, Actor{Roles: []string{"9001"}}, false},
		{"empty_list_fails_closed", Approvers{}, Actor{UserID: "1001", Roles: []string{"9001"}}, false},
		{"role_id_is_not_a_user_id", Approvers{Roles: []string{"1001"}}, Actor{UserID: "1001"}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := c.a.Allows(c.who); got != c.want {
				t.Fatalf("Allows(%+v) = %v", c.who, got)
			}
		})
	}
}

func TestActors(t *testing.T) {
	guild := &discordgo.Interaction{Member: &discordgo.Member{Nick: "Al", Roles: []string{"9001"}, User: &discordgo.User{ID: "1001", Username: "alice"}}}
	if a := InteractionActor(guild); a.UserID != "1001" || a.Name != "Al" || len(a.Roles) != 1 {
		t.Fatalf("guild actor = %+v", a)
	}
	dm := &discordgo.Interaction{User: &discordgo.User{ID: "1002", Username: "bob", GlobalName: "Bob"}}
	if a := InteractionActor(dm); a.UserID != "1002" || a.Name != "Bob" || a.Roles != nil {
		t.Fatalf("dm actor = %+v", a)
	}
	msg := &discordgo.Message{Author: &discordgo.User{ID: "1003", Username: "bot", Bot: true}, Member: &discordgo.Member{Roles: []string{"9001"}}}
	if a := MessageActor(msg); !a.Bot || a.Roles[0] != "9001" {
		t.Fatalf("message actor = %+v", a)
	}
}
