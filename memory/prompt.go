package memory

import (
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/analysis"
	"github.com/blevesearch/bleve/v2/analysis/lang/en"
)

// Fitting recalled memories into a prompt (issue 18, item 5). A small context (num_ctx 2048)
// leaves a memory section of a thousand or two characters: spent on whole memories in rank
// order it holds two or three, often near-copies of each other. Fit drops near-duplicates,
// cuts long memories to a snippet around the words the query matched, and fills the budget
// in rank order, so more distinct evidence survives.

// Shown is one memory as a prompt shows it.
type Shown struct {
	Hit
	// Text is what the prompt shows: the memory's text with its whitespace folded, or a
	// snippet of it around the query's words ("…" marks each cut end).
	Text string
	// Trimmed says Text is a snippet.
	Trimmed bool
}

// FitOptions bound one memory section.
type FitOptions struct {
	// Query is the text the hits were searched with; snippets are cut around its words.
	Query string
	// Budget is the characters the section's lines may take in all.
	Budget int
	// K is how many memories to show at most; 0 means DefaultK.
	K int
	// Line renders a shown memory as its line in the prompt; Fit counts its length against
	// Budget. Nil renders the text alone.
	Line func(Shown) string
}

// Bounds of one memory in a section: a snippet is never shorter than minSnippet bytes (a
// memory that would get less is left out) nor longer than maxShown.
const (
	minSnippet = 120
	maxShown   = 600
	// nearDuplicate is the share of its distinct terms a memory must share with one shown
	// already to count as a near-duplicate and be left out.
	nearDuplicate = 0.8
)

// Fit chooses and trims hits (best first) into a memory section of at most o.Budget
// characters: near-duplicates of a memory shown already are left out, memories longer than
// their share of the budget are cut to a snippet around the query's words, and a memory
// that does not fit is skipped for a shorter one ranked after it.
func Fit(hits []Hit, o FitOptions) []Shown {
	if o.K <= 0 {
		o.K = DefaultK
	}
	if o.Line == nil {
		o.Line = func(s Shown) string { return s.Text }
	}
	// Each memory may take a quarter of the budget (at least two snippets' worth): at
	// num_ctx 2048 a long memory gives way to others, while chat turns and short notes stay
	// whole (cut tighter, LoCoMo's answers fell out of the snippets more often than more
	// evidence came in: 58% of answers in the prompt at a sixth, 66% at a quarter).
	per := min(maxShown, max(2*minSnippet, o.Budget/4))
	terms := analyzedTerms(o.Query)
	var out []Shown
	var seen []map[string]bool
	left := o.Budget
	for _, h := range hits {
		if len(out) == o.K || left < minSnippet {
			break
		}
		text := strings.Join(strings.Fields(h.Text), " ")
		if text == "" {
			continue
		}
		set := analyzedTerms(text)
		if duplicates(set, seen) {
			continue
		}
		s := Shown{Hit: h, Text: text}
		over := len(o.Line(s)) - len(text) // the line's own frame: kind, source, date
		room := min(per, left-over)
		if room < minSnippet && len(text) > room {
			continue
		}
		if len(text) > room {
			s.Text, s.Trimmed = snippet(text, terms, room), true
		}
		line := o.Line(s)
		if len(line) > left {
			continue
		}
		left -= len(line)
		out = append(out, s)
		seen = append(seen, set)
	}
	return out
}

// duplicates reports whether set shares nearDuplicate of its terms with one of seen.
func duplicates(set map[string]bool, seen []map[string]bool) bool {
	if len(set) == 0 {
		return false
	}
	for _, o := range seen {
		common := 0
		for t := range set {
			if o[t] {
				common++
			}
		}
		if float64(common) >= nearDuplicate*float64(max(len(set), len(o))) {
			return true
		}
	}
	return false
}

// textAnalyzer is the index's text analyzer (English: lowercase, stop words, stemming), so
// a snippet centres on the same words a search matched.
var textAnalyzer = sync.OnceValue(func() analysis.Analyzer {
	return bleve.NewIndexMapping().AnalyzerNamed(en.AnalyzerName)
})

func analyze(s string) analysis.TokenStream {
	a := textAnalyzer()
	if a == nil {
		return nil
	}
	return a.Analyze([]byte(s))
}

// analyzedTerms are the analyzed terms of a query.
func analyzedTerms(q string) map[string]bool {
	out := map[string]bool{}
	for _, t := range analyze(q) {
		out[string(t.Term)] = true
	}
	return out
}

// snippet cuts text to at most size bytes around the window that holds the most distinct
// query terms, starting a little before the first of them; "…" marks a cut end.
func snippet(text string, terms map[string]bool, size int) string {
	const ell = "…"
	size -= 2 * len(ell)
	if size <= 0 {
		return ""
	}
	var at []int       // byte offsets of matching tokens
	var which []string // their terms
	for _, t := range analyze(text) {
		if terms[string(t.Term)] {
			at, which = append(at, t.Start), append(which, string(t.Term))
		}
	}
	start := 0
	best := -1
	for i := range at { // the window starting at match i that covers the most distinct terms
		d := map[string]bool{}
		for j := i; j < len(at) && at[j]-at[i] < size*3/4; j++ {
			d[which[j]] = true
		}
		if len(d) > best {
			best, start = len(d), at[i]
		}
	}
	// Some context before the first matched word: who is speaking, what it is about.
	start = max(0, start-size/5)
	if start+size > len(text) {
		start = max(0, len(text)-size)
	}
	if start > 0 { // begin at a word
		if i := strings.IndexByte(text[start:], ' '); i >= 0 && i < 20 {
			start += i + 1
		}
	}
	end := min(len(text), start+size)
	if end < len(text) { // end at a word
		if i := strings.LastIndexByte(text[start:end], ' '); i > size/2 {
			end = start + i
		}
	}
	for start < end && !utf8.RuneStart(text[start]) {
		start++
	}
	for end < len(text) && end > start && !utf8.RuneStart(text[end]) {
		end--
	}
	out := text[start:end]
	if start > 0 {
		out = ell + out
	}
	if end < len(text) {
		out += ell
	}
	return out
}

// SectionBudget is the characters a prompt's memory section is given at a context of
// numCtx tokens: a quarter of the context, so that at num_ctx 2048 (about 1,500
// characters) the evidence for a question still fits beside the directives, the commands
// and the reply. The caller caps it by what the rest of its prompt leaves.
func SectionBudget(numCtx int, charsPerToken float64) int {
	return int(float64(numCtx/4) * charsPerToken)
}

// PromptLine renders a shown memory as one line of a prompt's memory section: its kind,
// its day and its source (left out when the text starts with it, as a chat turn does, or
// when it only names the speaker), then the text, after "Speaker: " when the text does not
// start with the speaker's name already, so the model knows who said it.
func PromptLine(s Shown) string {
	var b strings.Builder
	b.WriteString("\n- [")
	b.WriteString(string(s.Kind))
	if !s.Created.IsZero() {
		b.WriteString(", ")
		b.WriteString(s.Created.UTC().Format("2 Jan 2006"))
	}
	speaker := strings.Join(strings.Fields(s.Speaker), " ")
	if src := strings.Join(strings.Fields(s.Source), " "); src != "" && !strings.HasPrefix(s.Text, src) &&
		(speaker == "" || !strings.Contains(src, speaker)) {
		b.WriteString(", ")
		b.WriteString(src)
	}
	b.WriteString("] ")
	if speaker != "" && !strings.HasPrefix(strings.TrimLeft(s.Text, "…"), speaker) {
		b.WriteString(speaker)
		b.WriteString(": ")
	}
	b.WriteString(s.Text)
	return b.String()
}
