package slack

import (
	"strings"

	"github.com/slack-go/slack"

	"github.com/agentd/agentd/bots"
	"github.com/agentd/agentd/daemon/client/display"
)

// Slack caps a section's text at 3000 characters.
const maxSection = 2900

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

// Blocks renders a relay message as Block Kit.
func Blocks(m bots.Message) []slack.Block {
	var blocks []slack.Block
	section := func(text string) {
		if len(text) > maxSection {
			text = text[:maxSection] + "…"
		}
		blocks = append(blocks, slack.NewSectionBlock(slack.NewTextBlockObject(slack.MarkdownType, text, false, false), nil, nil))
	}
	for _, p := range m.Parts {
		switch {
		case p.Code != "":
			code := escapeCode(p.Code)
			if len(code) > maxSection-8 {
				code = code[:maxSection-8] + "…"
			}
			section("```" + code + "```")
		case p.Quote:
			section("> " + strings.ReplaceAll(spans(p.Spans), "\n", "\n> "))
		case len(p.Spans) > 0:
			section(spans(p.Spans))
		}
	}
	if len(m.Buttons) > 0 {
		var els []slack.BlockElement
		for _, b := range m.Buttons {
			btn := slack.NewButtonBlockElement(actionPrefix+b.Action, bots.EncodeRef(b.Ref), slack.NewTextBlockObject(slack.PlainTextType, b.Label, false, false))
			switch b.Style {
			case "primary":
				btn.Style = slack.StylePrimary
			case "danger":
				btn.Style = slack.StyleDanger
			}
			els = append(els, btn)
		}
		blocks = append(blocks, slack.NewActionBlock("agentd_actions", els...))
	}
	return blocks
}

func spans(ss []bots.Span) string {
	var b strings.Builder
	for _, s := range ss {
		switch {
		case s.User != "":
			b.WriteString("<@" + s.User + ">")
		case s.Bold && strings.TrimSpace(s.Text) != "":
			// Bold must hug the text: "*x *" is not bold in mrkdwn.
			lead := s.Text[:len(s.Text)-len(strings.TrimLeft(s.Text, " "))]
			trail := s.Text[len(strings.TrimRight(s.Text, " ")):]
			b.WriteString(lead + "*" + escape(strings.TrimSpace(s.Text)) + "*" + trail)
		default:
			b.WriteString(escape(s.Text))
		}
	}
	return b.String()
}
