package bots

import (
	"regexp"
	"strings"
)

// Plain user ids, the only text a mention (<@…>) may be built from: anything else in one
// (a decision's By set by a local API caller, "U1><!channel>") could close the mention and
// ping a channel, so it is shown as escaped text instead.
var (
	slackUserID    = regexp.MustCompile(`^[UW][A-Z0-9]+$`)
	discordUserID  = regexp.MustCompile(`^[0-9]{15,20}$`)
	mentionFormats = map[string]*regexp.Regexp{"slack": slackUserID, "discord": discordUserID}
)

// MentionID reports whether s is a plain user id on platform (Slack: U…/W…; Discord: a
// snowflake), one an adapter may put in a mention. Both adapters check it.
func MentionID(platform, s string) bool {
	re := mentionFormats[platform]
	return re != nil && re.MatchString(s)
}

// Mention is the span showing user id on platform: a mention when it is a plain id there
// (MentionID), else the id as text, which the adapter escapes.
func Mention(platform, id string) Span {
	if MentionID(platform, id) {
		return Span{User: id}
	}
	return Span{Text: id}
}

// StripMention removes from text the mentions re finds (its first group the user id)
// that name self, the bot, and reports whether there was one; other mentions stay.
func StripMention(re *regexp.Regexp, self, text string) (string, bool) {
	found := false
	out := re.ReplaceAllStringFunc(text, func(m string) string {
		if self != "" && re.FindStringSubmatch(m)[1] == self {
			found = true
			return ""
		}
		return m
	})
	return strings.TrimSpace(out), found
}
