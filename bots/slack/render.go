package slack

import (
	"strings"

	"github.com/slack-go/slack"

	"github.com/agentd/agentd/bots"
	"github.com/agentd/agentd/internal/display"
)

// Slack's limits, in characters (counted by slackLen). A message over one is refused
// (invalid_blocks, msg_too_long, msg_blocks_too_long), so Blocks cuts to them.
const (
	maxSection = 3000
	maxBlocks  = 50
	maxText    = 40000
	// maxBlocksText is the blocks' text in all: Slack answers msg_blocks_too_long past
	// about 12,000 characters, a limit it does not document.
	maxBlocksText = 12000
)

// truncatedNote says that something was cut; Post attaches the full text as a file.
const truncatedNote = "_truncated — full text attached_"

// slackLen counts characters as Slack documents its limits (bots.UTF16Len).
var slackLen = bots.UTF16Len

// actionPrefix marks the buttons and dialogs this bot made.
const (
	actionPrefix     = "agentd_"
	feedbackCallback = "agentd_feedback"
	feedbackBlock    = "feedback"
	feedbackInput    = "text"
)

// escape makes text safe for mrkdwn: invisible and control characters show as escapes
// (display.Escape), and &, < and > are entities because Slack reads them as markup.
func escape(s string) string {
	return mrkdwnEscaper.Replace(display.Escape(s, display.Text))
}

var mrkdwnEscaper = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;")

// escapeCode also breaks runs of backticks, which would end a code block early.
func escapeCode(s string) string {
	return strings.ReplaceAll(escape(s), "```", "`\u200b`\u200b`")
}

// render renders m as Block Kit and reports whether it cut anything. Limits apply to the
// final, escaped text (bots.Fit cuts it on a safe boundary); a cut message ends with
// truncatedNote, before its buttons.
func render(m bots.Message) ([]slack.Block, bool) {
	texts := mrkdwn.Parts(m.Parts)
	room := maxBlocks - 1 // the note
	if len(m.Buttons) > 0 {
		room--
	}
	budget := maxBlocksText - slackLen(truncatedNote)
	var blocks []slack.Block
	cut := false
	for _, text := range texts {
		if len(blocks) >= room {
			cut = true
			break
		}
		fitted, c := bots.Fit(text, min(maxSection, budget), slackLen)
		cut = cut || c
		if strings.TrimSpace(fitted) == "" {
			if c {
				break // no room left
			}
			continue // Slack refuses an empty section
		}
		budget -= slackLen(fitted)
		blocks = append(blocks, slack.NewSectionBlock(slack.NewTextBlockObject(slack.MarkdownType, fitted, false, false), nil, nil))
	}
	if cut {
		blocks = append(blocks, slack.NewContextBlock("agentd_truncated", slack.NewTextBlockObject(slack.MarkdownType, truncatedNote, false, false)))
	}
	if len(m.Buttons) > 0 {
		blocks = append(blocks, buttons(m.Buttons))
	}
	return blocks, cut
}

// mrkdwn is how Slack writes a message's text (mrkdwn).
var mrkdwn = bots.Markup{
	Escape: escape,
	Code:   func(s string) string { return "```" + escapeCode(s) + "```" },
	Bold:   "*",
	Mention: func(user string) string {
		if bots.MentionID(Platform, user) {
			return "<@" + user + ">"
		}
		return escape(user) // not a plain id: shown as text, never as markup
	},
}

func buttons(bs []bots.Button) slack.Block {
	var els []slack.BlockElement
	for _, b := range bs {
		btn := slack.NewButtonBlockElement(actionPrefix+b.Action, bots.EncodeRef(b.Ref), slack.NewTextBlockObject(slack.PlainTextType, b.Label, false, false))
		switch b.Style {
		case "primary":
			btn.Style = slack.StylePrimary
		case "danger":
			btn.Style = slack.StyleDanger
		}
		els = append(els, btn)
	}
	return slack.NewActionBlock("agentd_actions", els...)
}

// fitSection escapes text for a section of its own, cut to Slack's limit.
func fitSection(text string) string {
	s, _ := bots.Fit(escape(text), maxSection, slackLen)
	return s
}

// summary is the message's text field: the notification and the fallback of its blocks.
func summary(m bots.Message) string {
	s, _ := bots.Fit(escape(m.Summary), maxText, slackLen)
	return s
}
