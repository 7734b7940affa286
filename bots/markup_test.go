package bots

import (
	"reflect"
	"strings"
	"testing"
)

// testMarkup marks what each rule did, so a test sees which one ran where.
var testMarkup = Markup{
	Escape:  func(s string) string { return strings.ReplaceAll(s, "*", `\*`) },
	Code:    func(s string) string { return "[code " + s + "]" },
	Bold:    "**",
	Mention: func(u string) string { return "<@" + u + ">" },
}

// TestMarkupLaysPartsOutAlikeOnEveryPlatform: code goes through the platform's code
// rule, every line of a quotation starts with "> ", bold hugs its text with the spaces
// outside, prose is escaped, mentions use the platform's rule and an empty part is left
// out.
func TestMarkupLaysPartsOutAlikeOnEveryPlatform(t *testing.T) {
	got := testMarkup.Parts([]Part{
		{Quote: true, Spans: []Span{{Text: "one\ntwo"}}},
		{},
		{Spans: []Span{{Text: " Plan: ", Bold: true}, {Text: "a*b by "}, {User: "U1"}}},
		{Code: "ls *"},
	})
	want := []string{"> one\n> two", ` **Plan:** a\*b by <@U1>`, "[code ls *]"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Parts = %q, want %q", got, want)
	}
}

// TestPlainTextIsTheMessageUnmarked: the attached full text has no markup, names users
// as @user, shows control characters as escapes and falls back to the summary.
func TestPlainTextIsTheMessageUnmarked(t *testing.T) {
	m := Message{Summary: "s", Parts: []Part{{Spans: []Span{{Text: "hi *", Bold: true}, {User: "U1"}}}, {Code: "a\x1bb"}}}
	if got, want := m.PlainText(), "hi *@U1\na\\x1bb\n"; got != want {
		t.Errorf("PlainText = %q, want %q", got, want)
	}
	if got := (Message{Summary: "only this"}).PlainText(); got != "only this\n" {
		t.Errorf("PlainText of a message without parts = %q, want its summary", got)
	}
}
