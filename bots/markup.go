package bots

import (
	"strings"

	"github.com/agentd/agentd/internal/display"
)

// Markup is how one platform writes a Message's text. The relay builds a message once,
// as parts and spans; a platform brings only these few rules, and Parts and Spans lay
// the message out the same way on every platform.
type Markup struct {
	Escape  func(s string) string    // plain text made safe as prose
	Code    func(s string) string    // a whole code block, its fences included
	Bold    string                   // the marker on each side of bold text
	Mention func(user string) string // a span naming a platform user
}

// Parts renders each part as final markup: code blocks, quotations ("> " before every
// line) and prose. A part with nothing in it is left out (a platform may refuse an empty
// section).
func (mk Markup) Parts(parts []Part) []string {
	out := make([]string, 0, len(parts))
	for _, p := range parts {
		switch {
		case p.Code != "":
			out = append(out, mk.Code(p.Code))
		case len(p.Spans) == 0:
		case p.Quote:
			out = append(out, "> "+strings.ReplaceAll(mk.Spans(p.Spans), "\n", "\n> "))
		default:
			out = append(out, mk.Spans(p.Spans))
		}
	}
	return out
}

// Spans renders a run of spans: mentions by the platform's rule, bold hugging its text
// ("*x *" or "**Plan: **" would not render bold, so spaces stay outside the markers),
// everything else escaped.
func (mk Markup) Spans(ss []Span) string {
	var b strings.Builder
	for _, s := range ss {
		t := strings.TrimSpace(s.Text)
		switch {
		case s.User != "":
			b.WriteString(mk.Mention(s.User))
		case s.Bold && t != "":
			i := strings.Index(s.Text, t)
			b.WriteString(s.Text[:i] + mk.Bold + mk.Escape(t) + mk.Bold + s.Text[i+len(t):])
		default:
			b.WriteString(mk.Escape(s.Text))
		}
	}
	return b.String()
}

// PlainText is the message as a person reads it, without markup, for the file a platform
// attaches when it had to cut the message (a file is not markup): mentions as @user,
// invisible and control characters shown as escapes, the summary when there are no parts.
func (m Message) PlainText() string {
	var parts []string
	for _, p := range m.Parts {
		if p.Code != "" {
			parts = append(parts, p.Code)
			continue
		}
		var b strings.Builder
		for _, s := range p.Spans {
			if s.User != "" {
				b.WriteString("@" + s.User)
			} else {
				b.WriteString(s.Text)
			}
		}
		parts = append(parts, b.String())
	}
	text := strings.Join(parts, "\n")
	if len(parts) == 0 {
		text = m.Summary
	}
	return display.Escape(text, display.Text) + "\n"
}
