package web

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"

	"github.com/agentd/agentd/api"
	"github.com/agentd/agentd/commands"
	"github.com/agentd/agentd/internal/testutil"
)

func TestSpecs(t *testing.T) {
	for _, c := range []commands.Command{NewWebSearch(nil, 0), NewReadWebpage(nil, nil)} {
		s := c.Spec()
		t.Run(s.Name, func(t *testing.T) {
			if s.Class != commands.ClassNetwork || !s.Idempotent {
				t.Errorf("class %s idempotent %v; want network, true", s.Class, s.Idempotent)
			}
			if s.Params.Type != "object" || s.Params.CheckGrammarLimits() != nil {
				t.Errorf("params unfit for the registry: %v", s.Params.CheckGrammarLimits())
			}
			if len(s.Description) > 30 {
				t.Errorf("description %q is long for the prompt budget", s.Description)
			}
			testutil.GoldenJSON(t, filepath.Join("testdata", "schemas", s.Name+".json"), s.Params)
		})
	}
}

func run(t *testing.T, c commands.Command, args string) (string, error) {
	t.Helper()
	return commands.Run(context.Background(), c, commands.Env{}, json.RawMessage(args), commands.Limits{})
}

func TestWebSearchCommand(t *testing.T) {
	three := []Result{
		{Title: "Ollama", URL: "https://ollama.com/", Snippet: "Get up and running."},
		{Title: "", URL: "https://example.org/"},
		{Title: "Third", URL: "https://third.example/", Snippet: "s3"},
	}
	var gotQuery string
	var gotN int
	fake := searchFunc(func(_ context.Context, q string, n int) ([]Result, error) {
		gotQuery, gotN = q, n
		switch q {
		case "nothing":
			return nil, nil
		case "down":
			return nil, fmt.Errorf("searxng at http://127.0.0.1:8888: %w: connection refused", ErrUnreachable)
		}
		return three, nil
	})
	tests := []struct {
		name    string
		s       Searcher
		max     int
		args    string
		want    string
		wantN   int
		wantErr string
	}{
		{name: "numbered_results", s: fake, args: `{"query":"ollama"}`, wantN: DefaultMaxResults,
			want: "Results for \"ollama\":\n1. Ollama\n   https://ollama.com/\n   Get up and running.\n" +
				"2. (untitled)\n   https://example.org/\n3. Third\n   https://third.example/\n   s3"},
		{name: "max_results_trims", s: fake, max: 2, args: `{"query":"ollama"}`, wantN: 2,
			want: "Results for \"ollama\":\n1. Ollama\n   https://ollama.com/\n   Get up and running.\n2. (untitled)\n   https://example.org/"},
		{name: "max_results_capped", s: fake, max: 500, args: `{"query":"x"}`, wantN: 20},
		{name: "query_spaces_collapsed", s: fake, args: `{"query":"  two\n words "}`, wantN: DefaultMaxResults},
		{name: "no_results", s: fake, args: `{"query":"nothing"}`, want: `No results for "nothing".`, wantN: DefaultMaxResults},
		{name: "backend_down", s: fake, args: `{"query":"down"}`, wantErr: "web_search: searxng at http://127.0.0.1:8888: search backend unreachable"},
		{name: "none_configured", s: nil, args: `{"query":"x"}`, wantErr: "web_search: no search backend configured: set a SearxNG URL or enable DuckDuckGo"},
		{name: "empty_query", s: fake, args: `{"query":"  "}`, wantErr: "web_search: empty query"},
		{name: "missing_query", s: fake, args: `{}`, wantErr: `missing required property "query"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			gotN = 0
			out, err := run(t, NewWebSearch(tc.s, tc.max), tc.args)
			if !wantError(t, err, tc.wantErr) {
				return
			}
			if tc.want != "" && out != tc.want {
				t.Errorf("output:\n%s\nwant:\n%s", out, tc.want)
			}
			if gotN != tc.wantN {
				t.Errorf("asked for %d results, want %d", gotN, tc.wantN)
			}
			if tc.name == "query_spaces_collapsed" && gotQuery != "two words" {
				t.Errorf("query %q", gotQuery)
			}
		})
	}
}

// asker records the calls a ReadWebpage makes to the model.
type asker struct {
	mu    sync.Mutex
	calls []string // question + "|" + text
	fail  bool
}

func (a *asker) ask(_ context.Context, question, text string) (string, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.calls = append(a.calls, question+"|"+text)
	if a.fail {
		return "", errors.New("model not found: run `ollama pull qwen2.5:3b`")
	}
	return fmt.Sprintf("answer %d", len(a.calls)), nil
}

func TestReadWebpageCommand(t *testing.T) {
	long := strings.Repeat("Paragraph about llamas and grammars.\n\n", 100) // 3.8 KB
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/article":
			w.Header().Set("Content-Type", "text/html")
			w.Write([]byte(`<title>Llamas</title><nav>menu</nav><main><h1>Llamas</h1><p>Llamas hum.</p></main>`))
		case "/long":
			w.Header().Set("Content-Type", "text/plain")
			w.Write([]byte(long))
		case "/empty":
			w.Header().Set("Content-Type", "text/html")
			w.Write([]byte(`<html><body><script>app()</script></body></html>`))
		case "/image":
			w.Header().Set("Content-Type", "image/jpeg")
			w.Write([]byte{0xff, 0xd8})
		}
	})
	art := srv.siteURL("/article")
	head := "Page: Llamas (" + art + ")\n\n"
	tests := []struct {
		name      string
		rw        ReadWebpage
		ask       bool // give it a model
		askFail   bool
		args      string
		want      string // the whole output, or a part of it when contains is set
		contains  bool
		wantCalls []string
		wantErr   string
	}{
		{name: "raw_requested", ask: true, args: `{"url":"` + art + `","get_raw_content":true}`,
			want: head + "# Llamas\n\nLlamas hum."},
		{name: "raw_without_model", args: `{"url":"` + art + `","question":"do llamas hum?"}`,
			want: head + "# Llamas\n\nLlamas hum."},
		{name: "raw_cut_to_budget", rw: ReadWebpage{RawBytes: 100}, args: `{"url":"` + srv.siteURL("/long") + `"}`,
			want: "llamas a\n[text cut at 100 of 3800 bytes; ask a question to read the rest]", contains: true},
		{name: "question", ask: true, args: `{"url":"` + art + `","question":"Do llamas hum?"}`,
			want: head + "answer 1", wantCalls: []string{"Do llamas hum?|# Llamas\n\nLlamas hum."}},
		{name: "topics", ask: true, args: `{"url":"` + art + `","topics_of_interest":["sounds"," diet "]}`,
			want:      head + "answer 1",
			wantCalls: []string{"Extract what the text says about: sounds; diet. Keep facts, figures and names exact.|# Llamas\n\nLlamas hum."}},
		{name: "question_and_topics", ask: true, args: `{"url":"` + art + `","question":"Q?","topics_of_interest":["t"]}`,
			wantCalls: []string{"Q?\nAlso note what it says about: t.|# Llamas\n\nLlamas hum."}},
		{name: "neither_summarizes", ask: true, args: `{"url":"` + art + `"}`,
			wantCalls: []string{"Summarize the main content: key facts, figures and names.|# Llamas\n\nLlamas hum."}},
		{name: "long_page_chunked_and_merged", ask: true, rw: ReadWebpage{ChunkBytes: 1000},
			args: `{"url":"` + srv.siteURL("/long") + `","question":"Q?"}`, want: "answer 5", contains: true},
		{name: "chunks_capped", ask: true, rw: ReadWebpage{ChunkBytes: 1000, MaxChunks: 2},
			args: `{"url":"` + srv.siteURL("/long") + `","question":"Q?"}`,
			want: "answer 3\n[only the first 2 of 4 parts of the page were read]", contains: true},
		{name: "model_fails", ask: true, askFail: true, args: `{"url":"` + art + `","question":"Q?"}`,
			wantErr: "read_webpage: asking the model about " + art + ": model not found"},
		{name: "empty_page", ask: true, args: `{"url":"` + srv.siteURL("/empty") + `"}`,
			want: "Page: " + srv.siteURL("/empty") + "\n(the page has no readable text)"},
		{name: "blocked", ask: true, args: `{"url":"http://169.254.169.254/latest/meta-data/"}`,
			wantErr: "read_webpage: fetch http://169.254.169.254/latest/meta-data/: 169.254.169.254 is a link-local address"},
		{name: "other_loopback_blocked", ask: true, args: `{"url":"http://127.0.0.2:` + srv.port() + `/article"}`,
			wantErr: "127.0.0.2 is a loopback address"},
		{name: "image_refused", ask: true, args: `{"url":"` + srv.siteURL("/image") + `"}`,
			wantErr: "content type not readable as text: image/jpeg"},
		{name: "bad_scheme", args: `{"url":"file:///etc/passwd"}`, wantErr: "only http and https URLs can be fetched, not file"},
		{name: "bad_topics_type", args: `{"url":"` + art + `","topics_of_interest":"sounds"}`, wantErr: "want an array"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rw := tc.rw
			rw.Fetcher = guarded(t, nil, srv)
			a := &asker{fail: tc.askFail}
			if tc.ask {
				rw.Ask = a.ask
			}
			out, err := run(t, &rw, tc.args)
			if !wantError(t, err, tc.wantErr) {
				return
			}
			switch {
			case tc.want == "":
			case tc.contains && !strings.Contains(out, tc.want), !tc.contains && out != tc.want:
				t.Errorf("output:\n%s\nwant:\n%s", out, tc.want)
			}
			if tc.wantCalls != nil && strings.Join(a.calls, "\n---\n") != strings.Join(tc.wantCalls, "\n---\n") {
				t.Errorf("model calls:\n%q\nwant:\n%q", a.calls, tc.wantCalls)
			}
		})
	}
}

func TestReadWebpageChunksFitTheBudget(t *testing.T) {
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		w.Write([]byte(strings.Repeat("Some sentence with words in it. ", 400))) // 12.8 KB
	})
	var sizes []int
	rw := &ReadWebpage{Fetcher: guarded(t, nil, srv), ChunkBytes: 3000, Ask: func(_ context.Context, q, text string) (string, error) {
		sizes = append(sizes, len(text))
		return "part answer", nil
	}}
	if _, err := run(t, rw, `{"url":"`+srv.siteURL("/")+`","question":"Q?"}`); err != nil {
		t.Fatal(err)
	}
	if len(sizes) != 6 { // 5 chunks and the merge
		t.Errorf("%d model calls (%v), want 6", len(sizes), sizes)
	}
	for _, n := range sizes {
		if n > 3000 {
			t.Errorf("a call got %d bytes, over the 3000 budget", n)
		}
	}
}

func TestChunkText(t *testing.T) {
	tests := []struct {
		name string
		text string
		size int
		want []string
	}{
		{name: "fits", text: "short", size: 100, want: []string{"short"}},
		{name: "paragraphs", text: "aaaa bbbb\n\ncccc dddd\n\neeee", size: 12, want: []string{"aaaa bbbb", "cccc dddd", "eeee"}},
		{name: "lines", text: "aaaa\nbbbb\ncccc", size: 10, want: []string{"aaaa\nbbbb", "cccc"}},
		{name: "words", text: "one two three four five", size: 10, want: []string{"one two", "three", "four five"}},
		{name: "no_breaks", text: "abcdefghij", size: 4, want: []string{"abcd", "efgh", "ij"}},
		{name: "multibyte_kept_whole", text: "ééééé", size: 3, want: []string{"é", "é", "é", "é", "é"}},
		{name: "size_below_a_rune", text: "日本", size: 1, want: []string{"日", "本"}},
		{name: "empty", text: "  \n ", size: 10, want: nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := chunkText(tc.text, tc.size)
			if strings.Join(got, "|") != strings.Join(tc.want, "|") || len(got) != len(tc.want) {
				t.Errorf("chunkText(%q, %d) = %q, want %q", tc.text, tc.size, got, tc.want)
			}
			for _, c := range got {
				if !utf8.ValidString(c) {
					t.Errorf("chunk %q is not valid UTF-8", c)
				}
			}
		})
	}
}

// TestReadWebpagePreview: the host the fetch connects to, as the network guard reads it,
// and the refusal the fetch would meet, without fetching anything.
func TestReadWebpagePreview(t *testing.T) {
	c := NewReadWebpage(&Fetcher{}, nil)
	tests := []struct {
		name, url, host, note string
	}{
		{"plain", " https://example.com/a?q=1 ", "example.com:443", ""},
		{"userinfo", "https://example.com@evil.example/leak", "evil.example:443", ""},
		{"idn", "http://пример.example/", `xn--e1afmkfd.example:80 (written "пример.example")`, ""},
		{"decimal_ip", "http://2130706433/admin", `127.0.0.1:80 (written "2130706433"), a loopback address`, "refused"},
		{"octal_ip", "http://0177.0.0.1:8080/", `127.0.0.1:8080 (written "0177.0.0.1"), a loopback address`, "refused"},
		{"no_scheme", "example.com/a", "", "no scheme"},
		{"file_scheme", "file:///etc/passwd", "", "refused"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			raw, _ := json.Marshal(map[string]string{"url": tt.url})
			pv := commands.Preview(context.Background(), c, commands.Env{}, raw)
			if pv == nil || pv.Kind != api.PreviewHost || pv.Host != tt.host {
				t.Fatalf("preview = %+v, want host %q", pv, tt.host)
			}
			if tt.note == "" && pv.Note != "" || !strings.Contains(pv.Note, tt.note) {
				t.Errorf("note = %q, want one with %q", pv.Note, tt.note)
			}
		})
	}
}

// TestWebSearchPreview: where the query's words go, in the order the backends are tried.
func TestWebSearchPreview(t *testing.T) {
	tests := []struct {
		name string
		s    Searcher
		host string
		note string
	}{
		{"none", nil, "", "no search backend"},
		{"searxng_then_ddg", Fallback{&SearxNG{BaseURL: "http://127.0.0.1:8888/searx"}, &DuckDuckGoHTML{}},
			"127.0.0.1:8888, a loopback address (SearxNG), then html.duckduckgo.com:443 (DuckDuckGo)", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pv := commands.Preview(context.Background(), NewWebSearch(tt.s, 0), commands.Env{}, json.RawMessage(`{"query":"x"}`))
			if pv == nil || pv.Host != tt.host || !strings.Contains(pv.Note, tt.note) || tt.note == "" && pv.Note != "" {
				t.Errorf("preview = %+v, want host %q, note with %q", pv, tt.host, tt.note)
			}
		})
	}
}
