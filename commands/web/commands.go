package web

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/agentd/agentd/commands"
)

// Defaults for the commands' budgets.
const (
	DefaultMaxResults = 8
	maxMaxResults     = 20
	DefaultRawBytes   = 12 << 10 // under the default 16 KiB output cap, with room for the header
	DefaultChunkBytes = 6000     // ~1,500–2,000 tokens: fits a 4k context with the prompt around it
	DefaultMaxChunks  = 6
)

// WebSearch is the web_search command over a Searcher.
type WebSearch struct {
	Searcher   Searcher // nil: every search fails with ErrNoSearcher
	MaxResults int      // results shown; default 8, at most 20
}

type webSearchArgs struct {
	Query string `json:"query" desc:"search terms" max:"200"`
}

var webSearchSpec = commands.Spec{
	Name:        "web_search",
	Description: "Search the web",
	Params:      commands.FromStruct(webSearchArgs{}),
	Class:       commands.ClassNetwork,
	Idempotent:  true,
}

var _ commands.Command = (*WebSearch)(nil)

// NewWebSearch returns the web_search command; s nil gives a command that explains what
// to configure. maxResults <= 0 means DefaultMaxResults.
func NewWebSearch(s Searcher, maxResults int) commands.Command {
	return &WebSearch{Searcher: s, MaxResults: maxResults}
}

// Spec implements commands.Command.
func (*WebSearch) Spec() commands.Spec { return webSearchSpec }

// Execute implements commands.Command: it returns the results as a numbered list.
func (w *WebSearch) Execute(ctx context.Context, _ commands.Env, raw json.RawMessage) (string, error) {
	var a webSearchArgs
	if err := commands.DecodeArgs("web_search", raw, &a); err != nil {
		return "", err
	}
	q := oneLine(a.Query)
	if q == "" {
		return "", fmt.Errorf("web_search: empty query: give the words to search for")
	}
	if w.Searcher == nil {
		return "", fmt.Errorf("web_search: %w: set a SearxNG URL or enable DuckDuckGo in agentd's [web_commands] config", ErrNoSearcher)
	}
	n := w.MaxResults
	if n <= 0 {
		n = DefaultMaxResults
	}
	n = min(n, maxMaxResults)
	results, err := w.Searcher.Search(ctx, q, n)
	if err != nil {
		return "", fmt.Errorf("web_search: %w", err)
	}
	if len(results) == 0 {
		return fmt.Sprintf("No results for %q.", q), nil
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Results for %q:\n", q)
	for i, r := range results[:min(len(results), n)] {
		title := r.Title
		if title == "" {
			title = "(untitled)"
		}
		fmt.Fprintf(&b, "%d. %s\n   %s\n", i+1, title, r.URL)
		if r.Snippet != "" {
			fmt.Fprintf(&b, "   %s\n", r.Snippet)
		}
	}
	return strings.TrimSuffix(b.String(), "\n"), nil
}

// AskFunc asks the model question about text (a page, or a part of one) and returns its
// answer. The daemon implements it with one model call; text is at most ChunkBytes long.
type AskFunc func(ctx context.Context, question, text string) (string, error)

// ReadWebpage is the read_webpage command: fetch a page, then answer a question about it
// with the model, or return its text.
type ReadWebpage struct {
	Fetcher *Fetcher // nil: a zero Fetcher (defaults, private addresses refused)
	Ask     AskFunc  // nil: always return the raw text
	// RawBytes bounds the page text returned raw; set it a little under the output cap.
	RawBytes int
	// ChunkBytes bounds the page text given to one Ask call; size it to the model's context.
	ChunkBytes int
	// MaxChunks bounds the Ask calls for one long page (plus one to merge the answers).
	MaxChunks int
}

type readWebpageArgs struct {
	URL              string   `json:"url" max:"1000"`
	Question         string   `json:"question,omitempty" desc:"what to find out" max:"300"`
	TopicsOfInterest []string `json:"topics_of_interest,omitempty" desc:"topics to extract" max:"5"`
	GetRawContent    bool     `json:"get_raw_content,omitempty" desc:"return the text"`
}

var readWebpageSpec = commands.Spec{
	Name:        "read_webpage",
	Description: "Read a web page",
	Params:      commands.FromStruct(readWebpageArgs{}),
	Class:       commands.ClassNetwork,
	Idempotent:  true,
}

var _ commands.Command = (*ReadWebpage)(nil)

// NewReadWebpage returns the read_webpage command with the default budgets. Build a
// *ReadWebpage directly to size RawBytes and ChunkBytes to the output cap and the model.
func NewReadWebpage(f *Fetcher, ask AskFunc) commands.Command {
	return &ReadWebpage{Fetcher: f, Ask: ask}
}

// Spec implements commands.Command.
func (*ReadWebpage) Spec() commands.Spec { return readWebpageSpec }

// Execute implements commands.Command.
func (r *ReadWebpage) Execute(ctx context.Context, _ commands.Env, raw json.RawMessage) (string, error) {
	var a readWebpageArgs
	if err := commands.DecodeArgs("read_webpage", raw, &a); err != nil {
		return "", err
	}
	f := r.Fetcher
	if f == nil {
		f = defaultFetcher
	}
	page, err := f.Fetch(ctx, a.URL)
	if err != nil {
		return "", fmt.Errorf("read_webpage: %w", err)
	}
	head := "Page: " + page.URL
	if page.Title != "" {
		head = fmt.Sprintf("Page: %s (%s)", page.Title, page.URL)
	}
	var notes []string
	if page.Truncated {
		notes = append(notes, fmt.Sprintf("the page is larger than %d bytes; only its start was read", f.maxBytes()))
	}
	if strings.TrimSpace(page.Text) == "" {
		return head + "\n(the page has no readable text)" + noteLines(notes), nil
	}

	if a.GetRawContent || r.Ask == nil {
		limit := positive(r.RawBytes, DefaultRawBytes)
		text, cut := cutText(page.Text, limit)
		if cut {
			notes = append(notes, fmt.Sprintf("text cut at %d of %d bytes; ask a question to read the rest", len(text), len(page.Text)))
		}
		return head + "\n\n" + text + noteLines(notes), nil
	}

	answer, more, err := r.answer(ctx, question(a), page.Text)
	if err != nil {
		return "", fmt.Errorf("read_webpage: asking the model about %s: %w", page.URL, err)
	}
	notes = append(notes, more...)
	return head + "\n\n" + strings.TrimSpace(answer) + noteLines(notes), nil
}

// defaultFetcher serves a ReadWebpage built without one.
var defaultFetcher = &Fetcher{}

// question is what Ask is asked: the question, the topics, or for a summary.
func question(a readWebpageArgs) string {
	var topics []string
	for _, t := range a.TopicsOfInterest {
		if t = oneLine(t); t != "" {
			topics = append(topics, t)
		}
	}
	q := oneLine(a.Question)
	switch {
	case q != "" && len(topics) > 0:
		return q + "\nAlso note what it says about: " + strings.Join(topics, "; ") + "."
	case len(topics) > 0:
		return "Extract what the text says about: " + strings.Join(topics, "; ") + ". Keep facts, figures and names exact."
	case q != "":
		return q
	}
	return "Summarize the main content: key facts, figures and names."
}

// answer asks the question of each chunk of text and, when there are several, merges
// the answers with one more call. It returns notes on what was left unread.
func (r *ReadWebpage) answer(ctx context.Context, q, text string) (string, []string, error) {
	size := positive(r.ChunkBytes, DefaultChunkBytes)
	chunks := chunkText(text, size)
	var notes []string
	if limit := positive(r.MaxChunks, DefaultMaxChunks); len(chunks) > limit {
		notes = append(notes, fmt.Sprintf("only the first %d of %d parts of the page were read", limit, len(chunks)))
		chunks = chunks[:limit]
	}
	if len(chunks) == 1 {
		a, err := r.Ask(ctx, q, chunks[0])
		return a, notes, err
	}
	var parts []string
	for i, c := range chunks {
		a, err := r.Ask(ctx, q, c)
		if err != nil {
			return "", nil, fmt.Errorf("part %d of %d: %w", i+1, len(chunks), err)
		}
		if a = strings.TrimSpace(a); a != "" {
			parts = append(parts, fmt.Sprintf("Part %d: %s", i+1, a))
		}
	}
	merged, _ := cutText("Answers from successive parts of one page:\n\n"+strings.Join(parts, "\n\n"), size)
	a, err := r.Ask(ctx, q, merged)
	return a, notes, err
}

// chunkText splits text into pieces of at most size bytes, at a paragraph, line or word
// break where one falls in the second half of a piece.
func chunkText(text string, size int) []string {
	var out []string
	text = strings.TrimSpace(text)
	for len(text) > size {
		piece, _ := cutText(text, size)
		if piece == "" { // size is smaller than one character
			_, n := utf8.DecodeRuneInString(text)
			piece = text[:n]
		}
		at := len(piece)
		for _, sep := range []string{"\n\n", "\n", " "} {
			if i := strings.LastIndex(piece, sep); i > 0 && i >= size/2 {
				at = i
				break
			}
		}
		out = append(out, strings.TrimSpace(text[:at]))
		text = strings.TrimSpace(text[at:])
	}
	if text != "" {
		out = append(out, text)
	}
	return out
}

func noteLines(notes []string) string {
	var b strings.Builder
	for _, n := range notes {
		b.WriteString("\n[" + n + "]")
	}
	return b.String()
}

func positive(v, def int) int {
	if v > 0 {
		return v
	}
	return def
}
