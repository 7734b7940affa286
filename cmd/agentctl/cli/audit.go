package cli

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/agentd/agentd/api"
)

var auditCmd = &command{
	name:  "audit",
	args:  "[--agent AGENT] [--since WHEN] [--limit N] [--json]",
	short: "the audit log: every proposal, decision, execution and change",
	long: `Audit prints the append-only audit log, oldest first: each proposal an agent made,
each decision on one (who decided, from where: agentctl, slack, discord, policy), each
command started and how it ended, and every change to an agent (created, task, paused,
permission patterns stored or removed). Entries of removed agents stay, under their id.

  --agent AGENT   one agent's entries (name or id)
  --since WHEN    entries from then on: a duration back (90m, 24h, 7d) or a time
                  (2026-11-21, 2026-11-21T09:00, or RFC 3339)
  --limit N       the newest N entries (default 100); past 10,000 they are fetched
                  in pages of 10,000, newest first, and printed oldest first`,
	run: verb(daemonVerbs.runAudit),
}

func (a daemonVerbs) runAudit(ctx context.Context, args []string) error {
	fs := a.newFlagSet()
	agent := fs.String("agent", "", "only this agent's entries")
	kind := fs.String("kind", "", "only entries of this `KIND` (decision, executed, … as the KIND column shows)")
	since := fs.String("since", "", "entries from `WHEN` on: 90m, 7d, 2026-11-21 or an RFC 3339 time")
	limit := fs.Int("limit", 0, "the newest `N` entries (default 100)")
	pos, err := a.parse(fs, args, -1)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usagef("unexpected argument %q (name the agent with --agent)", pos[0])
	}
	q := api.AuditQuery{Agent: *agent, Kind: *kind, Limit: *limit}
	if *since != "" {
		if q.Since, err = parseSince(*since, time.Now()); err != nil {
			return usagef("--since: %v", err)
		}
	}
	if *limit < 0 {
		return usagef("--limit %d: want a positive number of entries", *limit)
	}
	list, err := a.auditPages(ctx, q)
	if err != nil {
		return err
	}
	return printList(a.app, list, "no audit entries", "TIME\tAGENT\tKIND\tDETAIL", func(e *api.AuditEntry) string {
		return fmt.Sprintf("%s\t%s\t%s\t%s", formatTime(e.At), line(cmp.Or(e.Agent, e.AgentID)), line(e.Kind), truncate(detailText(e.Detail), 120))
	})
}

// parseSince reads a duration back from now (with d for days) or a time.
func parseSince(s string, now time.Time) (time.Time, error) {
	if n, ok := strings.CutSuffix(s, "d"); ok {
		var days int
		if _, err := fmt.Sscanf(n, "%d", &days); err == nil && fmt.Sprint(days) == n && days >= 0 {
			return now.Add(-time.Duration(days) * 24 * time.Hour), nil
		}
	}
	if d, err := time.ParseDuration(s); err == nil {
		if d < 0 {
			return time.Time{}, fmt.Errorf("%q is negative", s)
		}
		return now.Add(-d), nil
	}
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05", "2006-01-02T15:04", "2006-01-02 15:04", "2006-01-02"} {
		if t, err := time.ParseInLocation(layout, s, time.Local); err == nil {
			return t, nil
		}
	}
	return time.Time{}, fmt.Errorf("%q is neither a duration (90m, 24h, 7d) nor a time (2026-11-21, 2026-11-21T09:00)", s)
}

// detailText shows an entry's detail object as key=value pairs in key order.
func detailText(raw json.RawMessage) string {
	var m map[string]any
	if json.Unmarshal(raw, &m) != nil {
		return string(raw)
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var parts []string
	for _, k := range keys {
		v := m[k]
		switch v.(type) {
		case nil:
			continue
		case string:
			if v == "" {
				continue
			}
			parts = append(parts, fmt.Sprintf("%s=%s", line(k), oneParagraph(v.(string))))
		default:
			b, _ := json.Marshal(v)
			parts = append(parts, fmt.Sprintf("%s=%s", line(k), b))
		}
	}
	return strings.Join(parts, " ")
}

// auditPage is the most entries the daemon returns in one listing.
const auditPage = 10_000

// auditPages fetches q.Limit entries, asking the daemon in pages of at most auditPage
// (each one back from the oldest entry of the last), and returns them oldest first.
func (a daemonVerbs) auditPages(ctx context.Context, q api.AuditQuery) ([]api.AuditEntry, error) {
	want := q.Limit
	if want <= auditPage {
		return api.AuditRoute.Do(ctx, a.api(), "", q)
	}
	var pages [][]api.AuditEntry
	for got := 0; got < want; {
		q.Limit = min(want-got, auditPage)
		page, err := api.AuditRoute.Do(ctx, a.api(), "", q)
		if err != nil {
			return nil, err
		}
		if len(page) > 0 {
			pages = append(pages, page)
			q.Before = page[0].ID // oldest first: the first entry is where the next page ends
		}
		got += len(page)
		if len(page) < q.Limit {
			break // the log holds no more
		}
	}
	var out []api.AuditEntry
	for i := len(pages) - 1; i >= 0; i-- {
		out = append(out, pages[i]...)
	}
	return out, nil
}
