package discord

import (
	"strings"
	"unicode/utf16"

	"github.com/bwmarrin/discordgo"

	"github.com/agentd/agentd/bots"
	"github.com/agentd/agentd/internal/display"
)

// MaxContent is Discord's limit on a message's content.
const MaxContent = 2000

// zwsp (zero-width space) breaks a sequence Discord would otherwise interpret, without
// changing what people read.
const zwsp = "\u200b"

var markdownEscaper = strings.NewReplacer(
	`\`, `\\`, "*", `\*`, "_", `\_`, "~", `\~`, "`", "\\`", "|", `\|`,
	">", `\>`, "#", `\#`, "-", `\-`, "[", `\[`, "]", `\]`, "(", `\(`, ")", `\)`,
)

// mentionBreaker neutralises everything Discord turns into a mention or a live reference:
// @everyone/@here, users, roles, channels, slash commands, custom emoji and timestamps.
var mentionBreaker = strings.NewReplacer(
	"@everyone", "@"+zwsp+"everyone", "@here", "@"+zwsp+"here",
	"<@", "<"+zwsp+"@", "<#", "<"+zwsp+"#", "</", "<"+zwsp+"/", "<:", "<"+zwsp+":",
	"<a:", "<"+zwsp+"a:", "<t:", "<"+zwsp+"t:",
)

// Escape makes text from an agent, a model or a person safe to put in a message as plain
// text: invisible and control characters show as escapes (display.Escape), markdown shows
// literally and nothing becomes a mention. (allowed_mentions on every message already
// stops pings; this also stops the mention from rendering as one.)
func Escape(s string) string {
	return markdownEscaper.Replace(mentionBreaker.Replace(display.Escape(s, display.Text)))
}

// codeBlock makes s safe inside a ``` block: invisible characters show as escapes, no run
// of backticks can close it, and @everyone/@here are broken as elsewhere.
func codeBlock(s string) string {
	s = display.Escape(s, display.Text)
	for strings.Contains(s, "``") {
		s = strings.ReplaceAll(s, "``", "`"+zwsp+"`")
	}
	if strings.HasSuffix(s, "`") {
		s += zwsp // a trailing backtick would join the closing fence
	}
	return mentionBreaker.Replace(s)
}

// Len is a message's length as Discord's limit counts it (bots.UTF16Len).
var Len = bots.UTF16Len

// Truncate cuts s to at most n (by Len), marking the cut with "…".
func Truncate(s string, n int) string {
	if Len(s) <= n {
		return s
	}
	var b strings.Builder
	used := 0
	for _, r := range s {
		w := utf16.RuneLen(r)
		if used+w > n-1 {
			break
		}
		b.WriteRune(r)
		used += w
	}
	return b.String() + "…"
}

// truncatedNote ends a message cut to fit: said visibly, with the file that holds it all.
func truncatedNote(name string) string {
	return "\n(truncated — full text attached as " + Escape(name) + ")"
}

// fitContent makes content (final, escaped markdown) fit one message: when it is over
// Discord's limit it is cut with bots.Fit on a safe boundary (never inside an escape or a
// character; an open ``` fence is closed), the cut is said visibly, and full (the text
// for people, unescaped) goes along as a file called name.
func fitContent(content, full, name string) Message {
	if Len(content) <= MaxContent {
		return Message{Content: content}
	}
	note := truncatedNote(name)
	cut, _ := bots.Fit(content, MaxContent-Len(note), Len)
	return Message{Content: cut + note, Files: []*discordgo.File{textFile(name, full)}}
}

func textFile(name, text string) *discordgo.File {
	return &discordgo.File{Name: name, ContentType: "text/plain; charset=utf-8", Reader: strings.NewReader(text)}
}
