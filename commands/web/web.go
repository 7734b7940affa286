// Package web holds the web commands and their safety: an SSRF-guarded fetcher, HTML to
// text, and search backends.
//
// The daemon builds the two commands from its config (they are not registered at init):
// NewWebSearch over a Searcher (SearxNG, DuckDuckGoHTML, or a Fallback of both) and
// NewReadWebpage over a Fetcher and a callback that asks the model about a page.
//
// The Fetcher is the only way a model-chosen URL is fetched. It dials through the network
// guard (commands/netguard), which reads the host in every numeric form a client accepts,
// resolves it once, refuses it when any address is private, loopback, link-local or
// otherwise non-public, and connects to the address it checked, so a hostname that
// resolves (or re-resolves) to a private address and a redirect to one are both caught.
// Search backends are different: they only ever talk to the base URL the operator
// configured, which may well be a SearxNG on localhost; the model chooses only the query.
package web

import (
	"strings"

	"github.com/agentd/agentd/internal/display"
)

// cutText cuts s to at most limit bytes on a UTF-8 boundary (display.Cut) and reports
// whether it did; a limit ≤ 0 means no limit.
func cutText(s string, limit int) (string, bool) {
	if limit <= 0 {
		return s, false
	}
	kept := display.Cut(s, limit, "")
	return kept, len(kept) < len(s)
}

// oneLine collapses runs of white space, newlines included, to single spaces.
func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}
