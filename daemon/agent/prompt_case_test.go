package agent

import (
	"strings"
	"testing"
)

// The description follows "You are X, " mid-sentence, so a description written as
// its own sentence must not leave a capital after the comma.
func TestBuildPromptDescriptionReadsMidSentence(t *testing.T) {
	tests := []struct {
		name, desc, want string
	}{
		{"article_an_is_lowered", "An assistant that writes Go.", "You are ada, an assistant that writes Go."},
		{"article_a_is_lowered", "A careful reviewer", "You are ada, a careful reviewer."},
		{"the_is_lowered", "The team's tester", "You are ada, the team's tester."},
		{"acronym_keeps_capital", "NASA's archivist", "You are ada, NASA's archivist."},
		{"proper_noun_keeps_capital", "Go expert", "You are ada, Go expert."},
		{"lowercase_unchanged", "a helper", "You are ada, a helper."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			msgs := BuildPrompt(PromptInput{Name: "ada", Description: tt.desc})
			first, _, _ := strings.Cut(msgs[0].Content, "\n")
			if first != tt.want {
				t.Fatalf("first line = %q, want %q", first, tt.want)
			}
		})
	}
}
