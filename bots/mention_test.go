package bots

import (
	"regexp"
	"testing"
)

// TestMentionID: only a plain user id of the platform may become a mention.
func TestMentionID(t *testing.T) {
	for _, c := range []struct {
		name, platform, id string
		want               bool
	}{
		{"slack_user", "slack", "U024BE7LH", true},
		{"slack_enterprise_user", "slack", "W0123ABC", true},
		{"slack_closes_mention", "slack", "U1><!channel>", false},
		{"slack_lowercase", "slack", "u024be7lh", false},
		{"slack_channel_id", "slack", "C0123", false},
		{"slack_snowflake", "slack", "123456789012345678", false},
		{"discord_snowflake", "discord", "123456789012345678", true},
		{"discord_short_number", "discord", "12345", false},
		{"discord_everyone", "discord", "@everyone", false},
		{"discord_slack_id", "discord", "U024BE7LH", false},
		{"unknown_platform", "teams", "U024BE7LH", false},
		{"empty", "slack", "", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := MentionID(c.platform, c.id); got != c.want {
				t.Errorf("MentionID(%q, %q) = %v, want %v", c.platform, c.id, got, c.want)
			}
		})
	}
}

// TestStripMention: only the bot's own mentions are taken out of a message, and only
// they count as mentioning it; a bot whose id is not known yet is mentioned by nobody.
func TestStripMention(t *testing.T) {
	re := regexp.MustCompile(`<@!?([0-9]+)>`)
	for _, c := range []struct {
		name, self, text, want string
		found                  bool
	}{
		{"own_mention_removed", "42", "<@42> deploy it", "deploy it", true},
		{"nickname_form_removed", "42", " <@!42> hi ", "hi", true},
		{"other_mention_kept", "42", "<@7> deploy it", "<@7> deploy it", false},
		{"both_kept_and_removed", "42", "<@42> ask <@7>", "ask <@7>", true},
		{"self_unknown", "", "<@42> hi", "<@42> hi", false},
		{"no_mention", "42", "just text", "just text", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, found := StripMention(re, c.self, c.text)
			if got != c.want || found != c.found {
				t.Errorf("StripMention(%q) = %q, %v; want %q, %v", c.text, got, found, c.want, c.found)
			}
		})
	}
}
