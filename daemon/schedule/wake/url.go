package wake

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"github.com/agentd/agentd/api"
	"strings"

	"github.com/agentd/agentd/commands"
	"github.com/agentd/agentd/commands/web"
	"github.com/agentd/agentd/internal/display"
)

// pageSeen is what a url check saw: the page's validators, the hash of its text, and the
// text itself up to maxPageText, to show the next run what changed.
type pageSeen struct {
	Validators web.Validators `json:"validators"`
	Hash       string         `json:"hash"`
	Text       string         `json:"text,omitempty"`
	Cut        bool           `json:"cut,omitempty"` // Text is not the whole page's
}

// maxPageText bounds the text kept of a page (in the store, per URL) to diff the next one
// against; a longer page's change is told by its size only.
const maxPageText = 32 << 10

// checkURL checks one url condition: a conditional fetch with what the last run saw, so
// an unchanged page costs a 304 where the server keeps validators.
func (e *Engine) checkURL(ctx context.Context, u string, prev seen, since string) result {
	shown := display.Escape(u, display.Line)
	r := result{cond: "--when-url " + api.QuoteWord(u)}
	var was pageSeen
	raw, known := prev[urlKey(u)]
	known = known && json.Unmarshal(raw, &was) == nil
	ctx, cancel := context.WithTimeout(ctx, e.timeout)
	defer cancel()
	page, err := e.fetcher.FetchIfChanged(ctx, u, was.Validators)
	if err != nil {
		r.err = err
		return r
	}
	if page.NotModified {
		r.pend(urlKey(u), was)
		r.line = shown + " not modified " + since + " (the server said so)"
		return r
	}
	text := page.Title + "\n" + page.Text
	sum := sha256.Sum256([]byte(text))
	now := pageSeen{Validators: page.Validators, Hash: hex.EncodeToString(sum[:])}
	now.Text = display.Cut(text, maxPageText, "")
	now.Cut = len(now.Text) < len(text) || page.Truncated
	r.pend(urlKey(u), now)
	switch {
	case !known:
		r.wake = true
		r.line = shown + ": first look: no earlier state to compare with"
		r.text = fmt.Sprintf("%s (first look: no earlier state to compare with):\n%s", shown, display.Escape(strings.TrimSpace(text), display.Text))
	case was.Hash == now.Hash:
		r.line = shown + " unchanged " + since
	default:
		r.wake = true
		r.line, r.text = pageChange(shown, since, was, now, page)
	}
	return r
}

// pageChange says how a page changed: its line diff when both texts are whole, else its size.
func pageChange(shown, since string, was, now pageSeen, page *web.Page) (line, text string) {
	if was.Cut || now.Cut {
		line = fmt.Sprintf("%s changed %s", shown, since)
		return line, fmt.Sprintf("%s changed %s (%d bytes of text now; too long to show what changed):\n%s",
			shown, since, len(page.Title)+1+len(page.Text), display.Escape(now.Text, display.Text))
	}
	diff := commands.UnifiedDiff("before", "now", was.Text, now.Text)
	added, removed := 0, 0
	for i, l := range strings.SplitAfter(diff, "\n") {
		switch {
		case i < 2:
		case strings.HasPrefix(l, "+"):
			added++
		case strings.HasPrefix(l, "-"):
			removed++
		}
	}
	line = fmt.Sprintf("%s changed %s (+%d −%d lines)", shown, since, added, removed)
	return line, line + ":\n" + display.Escape(strings.TrimSuffix(diff, "\n"), display.Text)
}
