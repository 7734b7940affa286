package memory

import (
	"cmp"
	"slices"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/blevesearch/bleve/v2/analysis"
)

// Fitting recalled memories into a prompt. A small context
// (num_ctx 2048) leaves a memory section of about two thousand characters: spent on whole
// memories in rank order it holds seven or eight, often near-copies of each other, while
// the evidence for a question is among the top 25 hits five times in six. Fit shows the
// best memories whole and the next ones as short snippets around the query's words, picks
// them by maximal marginal relevance so near-copies give way to other evidence, and keeps
// the line frame short (Section).

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
	// K is how many memories to show at most; 0 means DefaultShown.
	K int
}

// DefaultShown is how many memories a section shows at most when FitOptions.K is 0: at
// num_ctx 2048 Fit fits about 21 of LoCoMo's chat turns, half of them as snippets.
const DefaultShown = 25

// PromptCandidates is how many of the best hits Fit chooses from; a caller searches for
// this many (plus any it will drop itself). Past the 30th hit LoCoMo's evidence is rare
// (84% of it is in the top 30, 87% in the top 60).
const PromptCandidates = 30

// The section's shape, measured on LoCoMo's development dialogs at num_ctx 2048 (a Fit
// budget of 1,950 characters; see recall_prompt_test.go; evidence shown / answer in the
// prompt):
//   - tailShare of the budget goes to the next memories as snippets of tailSnippet bytes,
//     the rest to the best memories whole (or cut to a quarter of the budget). All whole:
//     74% / 83%; 40% to the tail: 79% / 85%; 60%: 81% / 83%; 75%: 82% / 73% (the answers
//     fall out of the snippets).
//   - mmrLambda weighs relevance against overlap with what is shown: at 0.7, 81.4% / 83%;
//     rank order alone (1): 80.8% / 81%; 0.5: 80.5% / 83%.
const (
	tailShare   = 0.6
	tailSnippet = 55
	mmrLambda   = 0.7
	// minSnippet is the shortest snippet shown: a memory that would get less is left out.
	minSnippet = 40
	// maxShown is the longest a memory is shown, whatever the budget.
	maxShown = 600
	// nearDuplicate is the share of its distinct terms a memory must share with one shown
	// already to count as a near-duplicate and never be shown.
	nearDuplicate = 0.8
	// maxAnalyzed bounds the bytes of a candidate analyzed for its terms and the query's
	// words: the longest memory the API takes (8,000 bytes) whole, so a snippet holds the
	// words it was found by; maxMatches bounds the words a snippet is cut around. A
	// memory is analyzed once and shared through the hit cache (fitText), so 30 long
	// memories of repeated query words cost milliseconds once, not at every prompt.
	maxAnalyzed = 8192
	maxMatches  = 128
)

// candidate is one hit Fit may show: its folded text and analyzed terms, and its relevance
// (its score over the best hit's).
type candidate struct {
	hit   Hit
	text  string
	terms []string // its distinct analyzed terms, sorted
	// at are where the query's terms are in text, for a snippet around them.
	at  []match
	rel float64
	// sim is its largest overlap with a memory shown so far (see overlap).
	sim float64
	// long says it did not fit the first pass: the tail may show a snippet of it.
	long bool
}

// Candidates are the hits a memory section is chosen from, analyzed once for its query
// (Prepare), so the analysis can be done ahead of the prompt and the same candidates fit
// any budget.
type Candidates struct{ cands []candidate }

// Prepare analyzes the first PromptCandidates hits with text (best first) for query: the
// terms of each, and where the query's words are in it.
func Prepare(hits []Hit, query string) *Candidates {
	return &Candidates{cands: candidates(hits, PromptCandidates, analyzedTerms(query))}
}

// Fit chooses and trims the candidates (best first) into a memory section of at most o.Budget
// characters, in two passes: the best memories whole (or cut to a quarter of the budget,
// around the query's words) while the tail's share of the budget is left, then the next
// ones as short snippets until the budget ends. Each next memory is chosen by maximal
// marginal relevance (nextByMMR) among the first PromptCandidates hits; near-copies of a
// shown memory are never shown; a memory that does not fit gives way to the next.
// o.Query is the one the candidates were prepared for; c is not changed: it fits again.
func (c *Candidates) Fit(o FitOptions) []Shown {
	if o.K <= 0 {
		o.K = DefaultShown
	}
	f := fitter{o: o, cands: slices.Clone(c.cands), left: o.Budget, days: map[string]bool{}}
	f.pass(int(tailShare*float64(o.Budget)), min(maxShown, max(2*minSnippet, o.Budget/4)))
	f.pass(0, tailSnippet)
	return f.out
}

// fitter is one Fit call's state: the candidates not yet shown or given up, what is shown
// and the characters left.
type fitter struct {
	o     FitOptions
	cands []candidate
	out   []Shown
	left  int
	days  map[string]bool // the days with a heading in the section already
}

// frame is the characters s's line takes besides its text: its heading when it is the
// first memory of its day, its kind, source and speaker.
func (f *fitter) frame(s Shown) int {
	n := len(promptLine(s)) - len(s.Text)
	if d := day(s); d != "" && !f.days[d] {
		n += len(dayHeading(d))
	}
	return n
}

// pass shows memories of at most per bytes of text each while more than keep characters
// are left. The first candidate too long for what is left ends the pass, unless it is
// too long for any memory of this pass (it is cut in the next, or left out).
func (f *fitter) pass(keep, per int) {
	for len(f.out) < f.o.K && f.left-keep >= minSnippet && len(f.cands) > 0 {
		i := nextByMMR(f.cands, keep > 0)
		if i < 0 {
			return
		}
		c := f.cands[i]
		s := Shown{Hit: c.hit, Text: c.text}
		frame := f.frame(s)
		room := min(per, f.left-keep-frame)
		if room < minSnippet && len(c.text) > room {
			if keep > 0 && len(c.text) > per {
				f.cands[i].long = true // a snippet in the tail at most
				continue
			}
			return
		}
		f.cands = slices.Delete(f.cands, i, i+1)
		if len(c.text) > room {
			s.Text, s.Trimmed = snippet(c.text, c.at, room), true
		}
		cost := f.frame(s) + len(s.Text)
		if cost > f.left-keep {
			continue
		}
		f.left -= cost
		f.days[day(s)] = true
		f.out = append(f.out, s)
		for j := range f.cands {
			f.cands[j].sim = max(f.cands[j].sim, overlap(f.cands[j].terms, c.terms))
		}
	}
}

// candidates are the first n hits with text, analyzed once: their terms, and where the
// query's terms are.
func candidates(hits []Hit, n int, terms map[string]bool) []candidate {
	var out []candidate
	top := 0.0
	for _, h := range hits {
		if len(out) == n {
			break
		}
		an := h.analyzed()
		if an.text == "" {
			continue
		}
		if top == 0 {
			top = h.Score
		}
		rel := 1.0
		if top > 0 {
			rel = h.Score / top
		}
		c := candidate{hit: h, text: an.text, terms: an.terms, rel: rel}
		for _, t := range an.toks {
			if term := an.terms[t.term]; terms[term] && len(c.at) < maxMatches {
				c.at = append(c.at, match{at: int(t.at), term: term})
			}
		}
		out = append(out, c)
	}
	return out
}

// nextByMMR returns the index of the candidate with the highest marginal relevance
// (mmrLambda × relevance − (1 − mmrLambda) × its largest overlap with a shown memory), -1
// when every one is a near-duplicate of a shown memory.
func nextByMMR(cands []candidate, skipLong bool) int {
	best, at := 0.0, -1
	for i, c := range cands {
		if c.sim >= nearDuplicate || skipLong && c.long {
			continue
		}
		if v := mmrLambda*c.rel - (1-mmrLambda)*c.sim; at < 0 || v > best {
			best, at = v, i
		}
	}
	return at
}

// overlap is the share of terms two sorted term lists have in common, over the longer.
func overlap(a, b []string) float64 {
	if len(a) == 0 || len(b) == 0 {
		return 0
	}
	common := 0
	for i, j := 0, 0; i < len(a) && j < len(b); {
		switch c := strings.Compare(a[i], b[j]); {
		case c == 0:
			common++
			i++
			j++
		case c < 0:
			i++
		default:
			j++
		}
	}
	return float64(common) / float64(max(len(a), len(b)))
}

// fitText is a memory's text as Fit reads it: whitespace folded, its distinct terms, and
// where each term is in its first maxAnalyzed bytes. It is worked out once per memory and
// shared through the hit cache (hitCache.put gives each memory kept one), since a prompt
// finds mostly the same memories step after step.
type fitText struct {
	once  sync.Once
	raw   string   // the text it was made from
	text  string   // raw with its whitespace folded
	terms []string // distinct, sorted
	toks  []termAt // the tokens in order
}

// termAt is one token: its term (an index into terms) and its byte offset in text.
type termAt struct{ term, at int32 }

// analyzed returns h's analysis, made now if nobody made it yet.
func (h Hit) analyzed() *fitText {
	an := h.an
	if an == nil {
		an = &fitText{}
	}
	an.once.Do(func() { an.make(h.Text) })
	if an.raw != h.Text { // the caller changed the text since: analyze it alone
		an = &fitText{}
		an.make(h.Text)
	}
	return an
}

func (an *fitText) make(raw string) {
	an.raw, an.text = raw, fold(raw)
	toks := analyze(prefix(an.text, maxAnalyzed))
	index := make(map[string]int32, len(toks))
	for _, t := range toks {
		if _, ok := index[string(t.Term)]; !ok {
			index[string(t.Term)] = 0
			an.terms = append(an.terms, string(t.Term))
		}
	}
	slices.Sort(an.terms)
	for i, t := range an.terms {
		index[t] = int32(i)
	}
	an.toks = make([]termAt, len(toks))
	for i, t := range toks {
		an.toks[i] = termAt{term: index[string(t.Term)], at: int32(t.Start)}
	}
}

// mappingAnalyzers are the analyzers of the index's mapping (newMapping), resolved once
// the way the index resolves them (analyzersFor): Fit and the explanations analyze with
// the index's own English analyzer (lowercase, stop words, stemming) without an index at
// hand, so a snippet centres on the words a search matched.
var mappingAnalyzers = sync.OnceValues(func() (analyzers, error) { return analyzersFor(newMapping()) })

func analyze(s string) analysis.TokenStream {
	a, err := mappingAnalyzers()
	if err != nil {
		return nil // not registered: a build error in effect, which the index reports on Open
	}
	return a.text.Analyze([]byte(s))
}

// fold is s with its whitespace folded to single spaces, and trimmed: s itself when it is
// already so (most memories), not a copy.
func fold(s string) string {
	space := true // a leading space is not folded yet
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c >= utf8.RuneSelf, c == '\t', c == '\n', c == '\v', c == '\f', c == '\r', c == ' ' && space:
			return strings.Join(strings.Fields(s), " ")
		default:
			space = c == ' '
		}
	}
	if space && s != "" {
		return strings.Join(strings.Fields(s), " ") // a trailing space
	}
	return s
}

// prefix is s's first n bytes at most, cut at a rune's start.
func prefix(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// analyzedTerms are the analyzed terms of a query.
func analyzedTerms(q string) map[string]bool {
	out := map[string]bool{}
	for _, t := range analyze(q) {
		out[string(t.Term)] = true
	}
	return out
}

// match is one of the query's terms in a text: its byte offset and its analyzed term.
type match struct {
	at   int
	term string
}

// snippet cuts text to at most size bytes around the window that holds the most distinct
// query terms (at, in text order), starting a little before the first of them; "…" marks
// a cut end.
func snippet(text string, at []match, size int) string {
	const ell = "…"
	size -= 2 * len(ell)
	if size <= 0 {
		return ""
	}
	start := 0
	best := -1
	for i := range at { // the window starting at match i that covers the most distinct terms
		d := map[string]bool{}
		for j := i; j < len(at) && at[j].at-at[i].at < size*3/4; j++ {
			d[at[j].term] = true
		}
		if len(d) > best {
			best, start = len(d), at[i].at
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
// numCtx tokens: a third of the context (about 2,000 characters at num_ctx 2048), what Fit
// needs to show the evidence for a question four times in five. The caller caps it by
// what the rest of its prompt leaves: at num_ctx 2048 the first step's prompt leaves about
// 2,400 characters for memories and history together.
func SectionBudget(numCtx int, charsPerToken float64) int {
	return int(float64(numCtx/3) * charsPerToken)
}

// Section renders shown memories as the lines of a prompt's memory section, grouped under
// a heading for their day ("\n8 May 2023:"): memories without a time first, then the days
// in the order of their first memory, so the most relevant day comes first and a day's
// memories are read together. Fit counts exactly these characters against its budget;
// grouping saves a date on two lines in five of LoCoMo's sections, room for another memory.
func Section(shown []Shown) string {
	var b strings.Builder
	for _, s := range shown {
		if day(s) == "" {
			b.WriteString(promptLine(s))
		}
	}
	done := map[string]bool{"": true}
	for _, s := range shown {
		d := day(s)
		if done[d] {
			continue
		}
		done[d] = true
		b.WriteString(dayHeading(d))
		for _, o := range shown {
			if day(o) == d {
				b.WriteString(promptLine(o))
			}
		}
	}
	return b.String()
}

// day is the day s happened as its section's heading names it, "" without a time.
func day(s Shown) string {
	if s.Created.IsZero() {
		return ""
	}
	return s.Created.UTC().Format("2 Jan 2006")
}

func dayHeading(day string) string { return "\n" + day + ":" }

// promptLine renders a shown memory as its line under its day's heading: its kind unless it
// is a chat turn (most memories of a conversation are) and its source unless the text
// starts with it or it only names the speaker; then the text, after "Speaker: " unless it
// starts with exactly that, so the model knows who said it. The frame is kept
// short: at num_ctx 2048 what it saves goes to one more memory.
func promptLine(s Shown) string {
	// A colon in a name would let it pass for a line of someone else's ("Ann: Bo").
	name := func(s string) string { return fold(strings.ReplaceAll(s, ":", " ")) }
	speaker := name(s.Speaker)
	src := fold(s.Source)
	if s.Kind == KindChat {
		// A chat turn's source says where it was said ("slack message from Ana"); older
		// ones and imports without a speaker name the speaker there instead. A turn is
		// always labelled, so its text never passes for someone else's line.
		speaker = cmp.Or(speaker, name(src), "someone")
		src = ""
	}
	var meta []string
	if s.Kind != KindChat && s.Kind != "" {
		meta = append(meta, string(s.Kind))
	}
	if src != "" && !strings.HasPrefix(s.Text, src) && (speaker == "" || !strings.Contains(src, speaker)) {
		meta = append(meta, src)
	}
	var b strings.Builder
	b.WriteString("\n- ")
	if len(meta) > 0 {
		b.WriteString("[" + strings.Join(meta, ", ") + "] ")
	}
	// Text that already starts with "Speaker:" (an imported log) is not labelled twice;
	// anything else is, so "Ann" writing "Anna: …" shows as Ann's.
	if speaker != "" && !strings.HasPrefix(strings.TrimLeft(s.Text, "…"), speaker+":") {
		b.WriteString(speaker + ": ")
	}
	b.WriteString(s.Text)
	return b.String()
}
