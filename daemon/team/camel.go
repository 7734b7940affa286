package team

import (
	"fmt"
	"slices"
	"strings"
	"unicode"

	"github.com/agentd/agentd/internal/display"
)

// The CAMEL failure modes (Li et al., 2023, §4) a two-role phase watches for. Each ends
// the phase with its mode and a reason recorded, so a role-play never loops unbounded.
const (
	ModeRoleFlip = "role_flip"            // the assistant starts giving instructions
	ModeRepeat   = "repeated_instruction" // the assistant echoes the instruction back
	ModeFlake    = "flake_reply"          // "I will…" with nothing done
	ModeLoop     = "message_loop"         // thanks and goodbyes, or near-duplicate turns
)

// Msg is one turn of a phase transcript.
type Msg struct {
	Role      string
	Assistant bool // spoken by the phase's assistant (else its instructor)
	Text      string
}

// Failure is a failure mode seen in a transcript.
type Failure struct {
	Mode   string
	Reason string
}

// Thresholds of the detectors.
const (
	similarTo   = 0.8 // Jaccard similarity over words and word pairs that counts as the same text
	flakeWords  = 30  // an "I will" reply longer than this is taken to carry content
	pleasantMax = 16  // a thanks/goodbye message is at most this many words
)

// Detect checks the last message of a phase transcript against the earlier ones and
// returns the failure it shows, or nil. Messages with <INFO> are conclusions and are not
// checked.
func Detect(tr []Msg) *Failure {
	if len(tr) == 0 {
		return nil
	}
	m := tr[len(tr)-1]
	var prev *Msg
	if len(tr) >= 2 {
		prev = &tr[len(tr)-2]
	}
	if m.Assistant {
		if line, ok := instructs(m.Text); ok {
			return &Failure{ModeRoleFlip, fmt.Sprintf("the assistant %s gave an instruction instead of following one: %q", m.Role, display.Cut(line, 80, display.Ellipsis))}
		}
		if prev != nil && !prev.Assistant && similarity(m.Text, prev.Text) >= similarTo {
			return &Failure{ModeRepeat, fmt.Sprintf("the assistant %s repeated the instruction of %s instead of answering it", m.Role, prev.Role)}
		}
		if flake(m.Text) {
			return &Failure{ModeFlake, fmt.Sprintf("the assistant %s said what it would do without doing it: %q", m.Role, display.Cut(strings.TrimSpace(m.Text), 80, display.Ellipsis))}
		}
	}
	if prev != nil && pleasantry(m.Text) && pleasantry(prev.Text) {
		return &Failure{ModeLoop, fmt.Sprintf("%s and %s are exchanging thanks and goodbyes", prev.Role, m.Role)}
	}
	for i := len(tr) - 2; i >= 0; i-- {
		if similarity(m.Text, tr[i].Text) >= similarTo {
			return &Failure{ModeLoop, fmt.Sprintf("%s's turn %d repeats turn %d (%s's) nearly word for word", m.Role, len(tr), i+1, tr[i].Role)}
		}
	}
	return nil
}

// instructs reports a line that gives an instruction the CAMEL way ("Instruction: …"),
// which only the instructor should write.
func instructs(text string) (string, bool) {
	for _, line := range strings.Split(text, "\n") {
		l := strings.ToLower(strings.TrimLeft(strings.TrimSpace(line), "*#>- "))
		for _, p := range []string{"instruction:", "<instruction>", "my instruction", "i instruct you", "your next task is", "your task is to"} {
			if strings.HasPrefix(l, p) {
				return strings.TrimSpace(line), true
			}
		}
	}
	return "", false
}

var intents = []string{"i will", "i'll", "i am going to", "i'm going to", "let me", "i shall", "i can do that", "i'll get", "i will now"}

// flake reports a reply that only announces what it will do.
func flake(text string) bool {
	t := strings.ToLower(strings.TrimSpace(text))
	if strings.Contains(t, "```") || len(words(t)) > flakeWords {
		return false
	}
	for _, p := range []string{"sure", "ok", "okay", "certainly", "of course", "alright", "understood", "yes"} {
		if strings.HasPrefix(t, p) {
			t = strings.TrimLeft(t[len(p):], " ,.!:;-")
			break
		}
	}
	return slices.ContainsFunc(intents, func(p string) bool { return strings.HasPrefix(t, p) })
}

var pleasantries = []string{"thank", "thanks", "goodbye", "bye", "welcome", "pleasure", "cheers", "take care",
	"great working", "nice working", "have a nice", "have a great", "appreciate", "glad to help", "happy to help"}

// pleasantry reports a short message made of thanks or goodbyes.
func pleasantry(text string) bool {
	t := strings.ToLower(text)
	if len(words(t)) > pleasantMax {
		return false
	}
	return slices.ContainsFunc(pleasantries, func(p string) bool { return strings.Contains(t, p) })
}

// similarity is the Jaccard similarity of the two texts' sets of words and word pairs.
func similarity(a, b string) float64 {
	sa, sb := shingles(a), shingles(b)
	if len(sa) == 0 || len(sb) == 0 {
		return 0
	}
	inter := 0
	for s := range sa {
		if sb[s] {
			inter++
		}
	}
	return float64(inter) / float64(len(sa)+len(sb)-inter)
}

func shingles(s string) map[string]bool {
	w := words(strings.ToLower(s))
	out := map[string]bool{}
	for i := range w {
		out[w[i]] = true
		if i > 0 {
			out[w[i-1]+" "+w[i]] = true
		}
	}
	return out
}

func words(s string) []string {
	return strings.FieldsFunc(s, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) && r != '\'' })
}
