package web

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/JohannesKaufmann/dom"
	"golang.org/x/net/html"
)

// Result is one search hit.
type Result struct {
	Title   string
	URL     string
	Snippet string
}

// Searcher runs a web search and returns at most n results, best first.
type Searcher interface {
	Search(ctx context.Context, query string, n int) ([]Result, error)
}

// Search errors; the messages say which backend and what to fix.
var (
	ErrNoSearcher  = errors.New("no search backend configured")
	ErrUnreachable = errors.New("search backend unreachable")
)

// searchTimeout bounds one backend call when the context has no earlier deadline.
const searchTimeout = 15 * time.Second

// maxSearchBody bounds what a backend's reply may take in memory.
const maxSearchBody = 4 << 20

// SearxNG queries a SearxNG instance through its JSON API. The instance must allow the
// json format (settings.yml: search.formats includes json); SearxNG answers 403 otherwise.
type SearxNG struct {
	BaseURL string       // e.g. http://127.0.0.1:8888 or https://host/searx
	Client  *http.Client // nil: a plain client (no SSRF guard: the operator chose BaseURL)
}

// Search implements Searcher.
func (s *SearxNG) Search(ctx context.Context, query string, n int) ([]Result, error) {
	if s == nil || strings.TrimSpace(s.BaseURL) == "" {
		return nil, fmt.Errorf("searxng: %w: set its base URL", ErrNoSearcher)
	}
	u, err := endpoint(s.BaseURL, "search")
	if err != nil {
		return nil, fmt.Errorf("searxng: %w", err)
	}
	u.RawQuery = url.Values{"q": {query}, "format": {"json"}}.Encode()
	body, status, err := get(ctx, s.Client, u, "application/json")
	if err != nil {
		return nil, fmt.Errorf("searxng at %s: %w", s.BaseURL, err)
	}
	switch {
	case status == http.StatusForbidden:
		return nil, fmt.Errorf("searxng at %s: 403 Forbidden: the JSON API is off; add json to search.formats in its settings.yml", s.BaseURL)
	case status == http.StatusTooManyRequests:
		return nil, fmt.Errorf("searxng at %s: 429 Too Many Requests: its limiter refused the query; disable server.limiter for local use", s.BaseURL)
	case status != http.StatusOK:
		return nil, fmt.Errorf("searxng at %s: HTTP %d", s.BaseURL, status)
	}
	var reply struct {
		Results []struct {
			Title   string `json:"title"`
			URL     string `json:"url"`
			Content string `json:"content"`
		} `json:"results"`
	}
	if err := json.Unmarshal(body, &reply); err != nil {
		return nil, fmt.Errorf("searxng at %s: reply is not SearxNG JSON: %v", s.BaseURL, err)
	}
	var out []Result
	for _, r := range reply.Results {
		if len(out) == n {
			break
		}
		if r.URL == "" {
			continue
		}
		out = append(out, Result{Title: oneLine(r.Title), URL: r.URL, Snippet: oneLine(r.Content)})
	}
	return out, nil
}

// DefaultDuckDuckGoURL is DuckDuckGo's JavaScript-free results page.
const DefaultDuckDuckGoURL = "https://html.duckduckgo.com/html/"

// DuckDuckGoHTML scrapes DuckDuckGo's HTML results page. It needs no account, but
// DuckDuckGo may rate-limit or challenge automated queries; SearxNG is the steadier choice.
type DuckDuckGoHTML struct {
	BaseURL string       // default DefaultDuckDuckGoURL
	Client  *http.Client // nil: a plain client
}

// ddgUserAgent is sent because the results page refuses requests without a browser-like one.
const ddgUserAgent = "Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0"

// Search implements Searcher.
func (d *DuckDuckGoHTML) Search(ctx context.Context, query string, n int) ([]Result, error) {
	base := DefaultDuckDuckGoURL
	if d != nil && strings.TrimSpace(d.BaseURL) != "" {
		base = d.BaseURL
	}
	var client *http.Client
	if d != nil {
		client = d.Client
	}
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") {
		return nil, fmt.Errorf("duckduckgo: bad base URL %q", base)
	}
	u.RawQuery = url.Values{"q": {query}}.Encode()
	body, status, err := get(ctx, client, u, "text/html")
	if err != nil {
		return nil, fmt.Errorf("duckduckgo at %s: %w", base, err)
	}
	switch {
	case status == http.StatusAccepted, status == http.StatusForbidden, status == http.StatusTooManyRequests:
		return nil, fmt.Errorf("duckduckgo at %s: HTTP %d: it is rate-limiting or challenging automated queries; try later or configure SearxNG", base, status)
	case status != http.StatusOK:
		return nil, fmt.Errorf("duckduckgo at %s: HTTP %d", base, status)
	}
	doc, err := html.Parse(strings.NewReader(string(body)))
	if err != nil {
		return nil, fmt.Errorf("duckduckgo at %s: %v", base, err)
	}
	results, sawPage := parseDDG(doc, n)
	if len(results) == 0 && !sawPage {
		return nil, fmt.Errorf("duckduckgo at %s: the reply is not a results page (a bot check?); try later or configure SearxNG", base)
	}
	return results, nil
}

// parseDDG reads up to n organic results from a DuckDuckGo HTML page. sawPage reports
// whether the page looked like a results page at all (results or a no-results notice).
func parseDDG(doc *html.Node, n int) (out []Result, sawPage bool) {
	links := dom.FindAllNodes(doc, func(x *html.Node) bool {
		return dom.NodeName(x) == "a" && dom.HasClass(x, "result__a")
	})
	for _, a := range links {
		if len(out) == n {
			break
		}
		box := a.Parent
		for box != nil && !dom.HasClass(box, "result") {
			box = box.Parent
		}
		if box != nil && dom.HasClass(box, "result--ad") {
			continue
		}
		link := unwrapDDG(dom.GetAttributeOr(a, "href", ""))
		if link == "" {
			continue
		}
		r := Result{Title: oneLine(dom.CollectText(a)), URL: link}
		if box != nil {
			sn := dom.FindFirstNode(box, func(x *html.Node) bool { return dom.HasClass(x, "result__snippet") })
			if sn != nil {
				r.Snippet = oneLine(dom.CollectText(sn))
			}
		}
		out = append(out, r)
	}
	sawPage = len(links) > 0 || dom.ContainsNode(doc, func(x *html.Node) bool {
		return dom.HasClass(x, "no-results") || dom.HasClass(x, "result--no-result") || dom.HasID(x, "links")
	})
	return out, sawPage
}

// unwrapDDG turns DuckDuckGo's click-tracking link (//duckduckgo.com/l/?uddg=TARGET&rut=…)
// into TARGET; other absolute http(s) links pass through; anything else is "".
func unwrapDDG(href string) string {
	u, err := url.Parse(strings.TrimSpace(href))
	if err != nil {
		return ""
	}
	if strings.HasSuffix(u.Hostname(), "duckduckgo.com") && strings.HasPrefix(u.Path, "/l/") {
		if target := u.Query().Get("uddg"); target != "" {
			return unwrapDDG(target)
		}
		return ""
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return ""
	}
	return u.String()
}

// Fallback tries each searcher in turn and returns the first answer; an empty result
// list is an answer. The error, when all fail, names every failure.
type Fallback []Searcher

// Search implements Searcher.
func (f Fallback) Search(ctx context.Context, query string, n int) ([]Result, error) {
	if len(f) == 0 {
		return nil, ErrNoSearcher
	}
	var errs []error
	for _, s := range f {
		r, err := s.Search(ctx, query, n)
		if err == nil {
			return r, nil
		}
		errs = append(errs, err)
		if ctx.Err() != nil {
			break
		}
	}
	return nil, errors.Join(errs...)
}

// endpoint joins a path onto a base URL that may itself carry a path prefix.
func endpoint(base, path string) (*url.URL, error) {
	u, err := url.Parse(strings.TrimSpace(base))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("bad base URL %q: want http(s)://host[:port][/prefix]", base)
	}
	u.Path = strings.TrimSuffix(u.Path, "/") + "/" + path
	u.RawPath = ""
	return u, nil
}

// get fetches u and returns the body (capped), the status, and an error only when no
// reply came; that error wraps ErrUnreachable.
func get(ctx context.Context, client *http.Client, u *url.URL, accept string) ([]byte, int, error) {
	if client == nil {
		client = http.DefaultClient
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, searchTimeout)
		defer cancel()
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, 0, err
	}
	req.Header.Set("Accept", accept)
	req.Header.Set("User-Agent", ddgUserAgent)
	resp, err := client.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return nil, 0, fmt.Errorf("%w: %v", ErrUnreachable, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxSearchBody))
	if err != nil {
		return nil, 0, fmt.Errorf("%w: reading the reply: %v", ErrUnreachable, err)
	}
	return body, resp.StatusCode, nil
}
