package bots

import "testing"

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
