package run

import "strings"

// Identity is the line every run's prompt starts with, "You are NAME, DESCRIPTION",
// without a final stop: an agent's prompt ends it there, a team role's goes on (", in a
// team following…"). The description reads mid-sentence whoever wrote it: its trailing
// stop is dropped and a leading article lowered ("An assistant" → "an assistant").
func Identity(name, description string) string {
	d := strings.TrimSuffix(strings.TrimSpace(description), ".")
	return "You are " + name + ", " + midSentence(d)
}

// midSentence lowers the first letter of a description written as its own sentence
// ("An assistant that…") so it reads on after "You are X, ". Only a leading article or
// pronoun is lowered: acronyms and names ("NASA's…", "Go expert") keep their capital.
func midSentence(s string) string {
	first, _, _ := strings.Cut(s, " ")
	switch first {
	case "A", "An", "The", "Your", "One", "Someone", "Something":
		return strings.ToLower(first[:1]) + s[1:]
	}
	return s
}
