package slack

import (
	"context"
	"time"
)

// A message event names its author by id only; decisions and answers typed in a thread
// also carry the author's display name (users.info), so agentctl follow, history and the
// audit log say "Ana Lima" where they said U04ABC. A click carries the name already.

// nameEntry is a cached name; "" when Slack did not say (no users:read scope, an error).
type nameEntry struct {
	name string
	at   time.Time
}

const (
	nameTTL     = time.Hour        // display names change rarely
	nameMissTTL = 10 * time.Minute // after a failure, ask again only this much later
	nameTimeout = 2 * time.Second  // the lookup delays the reply it names, so not for long
)

// userName returns the Slack display name of user id (else the real name, else the
// handle), or "" when Slack does not say: the decision then shows the id, as before.
func (b *Bot) userName(ctx context.Context, id string) string {
	b.namesMu.Lock()
	e, ok := b.names[id]
	b.namesMu.Unlock()
	if ok && (time.Since(e.at) < nameTTL && e.name != "" || time.Since(e.at) < nameMissTTL) {
		return e.name
	}
	ctx, cancel := context.WithTimeout(ctx, nameTimeout)
	defer cancel()
	name := ""
	if u, err := b.api.GetUserInfoContext(ctx, id); err != nil {
		b.log.Debug("slack: users.info failed; decisions show the user id", "user", id, "err", err)
	} else {
		for _, n := range []string{u.Profile.DisplayName, u.RealName, u.Name} {
			if n != "" {
				name = n
				break
			}
		}
	}
	b.namesMu.Lock()
	defer b.namesMu.Unlock()
	if b.names == nil {
		b.names = map[string]nameEntry{}
	}
	b.names[id] = nameEntry{name: name, at: time.Now()}
	return name
}
