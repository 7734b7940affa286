package web

import (
	"context"
	"encoding/json"
	"net/url"
	"strconv"
	"strings"

	"github.com/agentd/agentd/api"
	"github.com/agentd/agentd/commands"
	"github.com/agentd/agentd/commands/netguard"
)

// Preview implements commands.Previewer: the search backends the query goes to, in the
// order they are tried. They are the operator's, not the model's; the point is where the
// query's words are sent.
func (w *WebSearch) Preview(_ context.Context, _ commands.Env, _ json.RawMessage) *api.Preview {
	hosts := backendHosts(w.Searcher)
	pv := &api.Preview{Kind: api.PreviewHost, Host: strings.Join(hosts, ", then ")}
	if len(hosts) == 0 {
		pv.Note = "no search backend is configured: it will fail"
	}
	return pv
}

// backendHosts names the hosts s sends queries to, as the network guard reads them.
func backendHosts(s Searcher) []string {
	base := func(raw, what string) []string {
		u, err := url.Parse(strings.TrimSpace(raw))
		if err != nil || u.Host == "" {
			return []string{what + " (bad base URL)"}
		}
		return []string{netguard.DescribeHost(u) + " (" + what + ")"}
	}
	switch s := s.(type) {
	case *SearxNG:
		if s != nil && strings.TrimSpace(s.BaseURL) != "" {
			return base(s.BaseURL, "SearxNG")
		}
	case *DuckDuckGoHTML:
		if s == nil || strings.TrimSpace(s.BaseURL) == "" {
			return base(DefaultDuckDuckGoURL, "DuckDuckGo")
		}
		return base(s.BaseURL, "DuckDuckGo")
	case Fallback:
		var out []string
		for _, one := range s {
			out = append(out, backendHosts(one)...)
		}
		return out
	case nil:
	default:
		return []string{"a search backend"}
	}
	return nil
}

// Preview implements commands.Previewer: the host the fetch would connect to first, as
// the network guard reads it, and whether the guard or the URL check would refuse it.
func (r *ReadWebpage) Preview(_ context.Context, _ commands.Env, raw json.RawMessage) *api.Preview {
	var a readWebpageArgs
	if json.Unmarshal(raw, &a) != nil {
		return nil
	}
	pv := &api.Preview{Kind: api.PreviewHost}
	u, err := checkURL(a.URL) // Fetch's own reading of the URL
	if err != nil {
		pv.Note = "it will be refused: " + err.Error()
		if u, perr := url.Parse(strings.TrimSpace(a.URL)); perr == nil && u.Host != "" {
			pv.Host = netguard.DescribeHost(u)
		}
		return pv
	}
	pv.Host = netguard.DescribeHost(u)
	f := r.Fetcher
	if f == nil {
		f = defaultFetcher
	}
	if err := f.guard().CheckHost(u.Hostname(), portOf(u)); err != nil {
		pv.Note = "it will be refused: " + err.Error()
	}
	return pv
}

// portOf is u's port, or its scheme's.
func portOf(u *url.URL) uint16 {
	if p, err := strconv.ParseUint(u.Port(), 10, 16); err == nil {
		return uint16(p)
	}
	if u.Scheme == "http" {
		return 80
	}
	return 443
}
