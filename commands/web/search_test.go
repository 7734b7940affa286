package web

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"reflect"
	"testing"
)

// searxReply is the shape of SearxNG's /search?format=json reply (fields we do not read
// included, as the real server sends them).
const searxReply = `{
  "query": "ollama structured outputs",
  "number_of_results": 0,
  "results": [
    {"url": "https://ollama.com/blog/structured-outputs", "title": "Structured outputs · Ollama Blog",
     "content": "Ollama now supports structured outputs\n making it possible to constrain output.",
     "engine": "duckduckgo", "parsed_url": ["https", "ollama.com", "/blog/structured-outputs", "", "", ""],
     "template": "default.html", "engines": ["duckduckgo", "brave"], "positions": [1, 2], "score": 4.0,
     "category": "general"},
    {"url": "", "title": "no url: skipped", "content": ""},
    {"url": "https://github.com/ollama/ollama/blob/main/docs/api.md", "title": "ollama/docs/api.md",
     "content": "format: json or a JSON schema", "engine": "brave", "score": 2.5, "category": "general"},
    {"url": "https://pypi.org/project/ollama/", "title": "ollama · PyPI", "content": "", "engine": "brave"}
  ],
  "answers": [], "corrections": [], "infoboxes": [], "suggestions": ["ollama json mode"],
  "unresponsive_engines": [["google", "timeout"]]
}`

func TestSearxNG(t *testing.T) {
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		if q.Get("format") != "json" || q.Get("q") != "ollama structured outputs" {
			http.Error(w, "bad query "+r.URL.RawQuery, http.StatusBadRequest)
			return
		}
		switch r.URL.Path {
		case "/search", "/searx/search":
			w.Header().Set("Content-Type", "application/json")
			w.Write([]byte(searxReply))
		case "/forbidden/search": // what SearxNG answers when json is not in search.formats
			http.Error(w, "403 Forbidden", http.StatusForbidden)
		case "/limited/search":
			http.Error(w, "Too Many Requests", http.StatusTooManyRequests)
		case "/broken/search":
			http.Error(w, "oops", http.StatusInternalServerError)
		case "/html/search":
			w.Write([]byte("<html>not json</html>"))
		default:
			http.NotFound(w, r)
		}
	})
	dead := closedServer(t)
	all := []Result{
		{Title: "Structured outputs · Ollama Blog", URL: "https://ollama.com/blog/structured-outputs",
			Snippet: "Ollama now supports structured outputs making it possible to constrain output."},
		{Title: "ollama/docs/api.md", URL: "https://github.com/ollama/ollama/blob/main/docs/api.md", Snippet: "format: json or a JSON schema"},
		{Title: "ollama · PyPI", URL: "https://pypi.org/project/ollama/"},
	}
	tests := []struct {
		name    string
		base    string
		n       int
		want    []Result
		wantErr string
		is      error
	}{
		{name: "results", base: srv.URL, n: 10, want: all},
		{name: "trailing_slash", base: srv.URL + "/", n: 10, want: all},
		{name: "path_prefix", base: srv.URL + "/searx/", n: 10, want: all},
		{name: "limit_n", base: srv.URL, n: 2, want: all[:2]},
		{name: "json_disabled_403", base: srv.URL + "/forbidden", n: 5, wantErr: "403 Forbidden: the JSON API is off; add json to search.formats in its settings.yml"},
		{name: "rate_limited_429", base: srv.URL + "/limited", n: 5, wantErr: "disable server.limiter"},
		{name: "server_error", base: srv.URL + "/broken", n: 5, wantErr: "HTTP 500"},
		{name: "not_json", base: srv.URL + "/html", n: 5, wantErr: "reply is not SearxNG JSON"},
		{name: "unreachable", base: dead.URL, n: 5, wantErr: "searxng at " + dead.URL + ": search backend unreachable", is: ErrUnreachable},
		{name: "not_configured", base: "", n: 5, wantErr: "no search backend configured", is: ErrNoSearcher},
		{name: "bad_base", base: "localhost:8888", n: 5, wantErr: "bad base URL"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := (&SearxNG{BaseURL: tc.base}).Search(context.Background(), "ollama structured outputs", tc.n)
			if tc.is != nil && !errors.Is(err, tc.is) {
				t.Errorf("err %v is not %v", err, tc.is)
			}
			if !wantError(t, err, tc.wantErr) {
				return
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

func TestDuckDuckGoHTML(t *testing.T) {
	page, err := os.ReadFile("testdata/ddg_results.html")
	if err != nil {
		t.Fatal(err)
	}
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("q") != "ollama structured outputs" {
			http.Error(w, "bad query", http.StatusBadRequest)
			return
		}
		if r.Header.Get("User-Agent") == "" {
			http.Error(w, "no agent", http.StatusForbidden)
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=UTF-8")
		switch r.URL.Path {
		case "/html/":
			w.Write(page)
		case "/none/":
			w.Write([]byte(`<html><body><div id="links" class="results"><div class="no-results">No results.</div></div></body></html>`))
		case "/challenge/":
			w.WriteHeader(http.StatusAccepted) // DuckDuckGo's answer to a query it takes for a bot
			w.Write([]byte(`<html><body><div class="anomaly-modal">Unfortunately, bots use DuckDuckGo too.</div></body></html>`))
		case "/captcha/":
			w.Write([]byte(`<html><body><form id="challenge-form">Select all squares with ducks</form></body></html>`))
		default:
			http.NotFound(w, r)
		}
	})
	dead := closedServer(t)
	all := []Result{
		{Title: "Structured outputs · Ollama Blog", URL: "https://ollama.com/blog/structured-outputs",
			Snippet: "Ollama now supports structured outputs making it possible to constrain a model's output to a specific format defined by a JSON schema."},
		{Title: "ollama/docs/api.md at main · ollama/ollama · GitHub", URL: "https://github.com/ollama/ollama/blob/main/docs/api.md#request-structured-outputs",
			Snippet: "format: the format to return a response in. Format can be json or a JSON schema. Request (Structured outputs)"},
		{Title: "ollama · PyPI", URL: "https://pypi.org/project/ollama/",
			Snippet: "The Ollama Python library provides the easiest way to integrate Python 3.8+ projects with Ollama."},
		{Title: "Constrained decoding, explained", URL: "https://news.example/llm?a=1&b=%C3%A9"},
	}
	tests := []struct {
		name    string
		base    string
		n       int
		want    []Result
		wantErr string
	}{
		{name: "results_ads_skipped_links_unwrapped", base: srv.URL + "/html/", n: 10, want: all},
		{name: "limit_n", base: srv.URL + "/html/", n: 1, want: all[:1]},
		{name: "no_results", base: srv.URL + "/none/", n: 10, want: nil},
		{name: "bot_challenge_202", base: srv.URL + "/challenge/", n: 10, wantErr: "HTTP 202: it is rate-limiting or challenging automated queries"},
		{name: "not_a_results_page", base: srv.URL + "/captcha/", n: 10, wantErr: "not a results page"},
		{name: "wrong_path", base: srv.URL + "/gone/", n: 10, wantErr: "HTTP 404"},
		{name: "unreachable", base: dead.URL + "/html/", n: 10, wantErr: "search backend unreachable"},
		{name: "bad_base", base: "ftp://x/", n: 10, wantErr: "bad base URL"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := (&DuckDuckGoHTML{BaseURL: tc.base}).Search(context.Background(), "ollama structured outputs", tc.n)
			if !wantError(t, err, tc.wantErr) {
				return
			}
			if !reflect.DeepEqual(got, tc.want) {
				g, _ := json.MarshalIndent(got, "", " ")
				t.Errorf("got %s\nwant %+v", g, tc.want)
			}
		})
	}
}

func TestUnwrapDDG(t *testing.T) {
	tests := []struct{ name, href, want string }{
		{name: "redirect", href: "//duckduckgo.com/l/?uddg=https%3A%2F%2Fexample.org%2Fa%3Fb%3Dc&rut=x", want: "https://example.org/a?b=c"},
		{name: "redirect_https", href: "https://duckduckgo.com/l/?uddg=http%3A%2F%2Fexample.org%2F", want: "http://example.org/"},
		{name: "direct", href: "https://example.org/x", want: "https://example.org/x"},
		{name: "redirect_without_target", href: "//duckduckgo.com/l/?rut=x", want: ""},
		{name: "javascript_target", href: "//duckduckgo.com/l/?uddg=javascript%3Aalert(1)", want: ""},
		{name: "relative", href: "/html/?q=x", want: ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := unwrapDDG(tc.href); got != tc.want {
				t.Errorf("unwrapDDG(%q) = %q, want %q", tc.href, got, tc.want)
			}
		})
	}
}

// searchFunc adapts a func to Searcher.
type searchFunc func(ctx context.Context, q string, n int) ([]Result, error)

func (f searchFunc) Search(ctx context.Context, q string, n int) ([]Result, error) {
	return f(ctx, q, n)
}

func TestFallback(t *testing.T) {
	down := searchFunc(func(context.Context, string, int) ([]Result, error) {
		return nil, errors.New("searxng at http://127.0.0.1:8888: search backend unreachable")
	})
	empty := searchFunc(func(context.Context, string, int) ([]Result, error) { return nil, nil })
	one := searchFunc(func(context.Context, string, int) ([]Result, error) { return []Result{{Title: "t", URL: "u"}}, nil })
	tests := []struct {
		name    string
		f       Fallback
		want    int
		wantErr string
	}{
		{name: "first_answers", f: Fallback{one, down}, want: 1},
		{name: "second_after_failure", f: Fallback{down, one}, want: 1},
		{name: "empty_is_an_answer", f: Fallback{empty, one}, want: 0},
		{name: "all_fail", f: Fallback{down, down}, wantErr: "unreachable\nsearxng"},
		{name: "none", f: nil, wantErr: "no search backend configured"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.f.Search(context.Background(), "q", 5)
			if !wantError(t, err, tc.wantErr) {
				return
			}
			if len(got) != tc.want {
				t.Fatalf("got %v; want %d results", got, tc.want)
			}
		})
	}
}
