package slack

import (
	"context"
	"time"
)

// A message event names its author by id only; decisions and answers typed in a thread
// also carry the author's display name (users.info), so agentctl follow, history and the
// audit log say "Ana Lima" where they said U04ABC. A click carries the name already.

const (
	nameTTL     = time.Hour        // display names change rarely
	nameMissTTL = 10 * time.Minute // after a failure, ask again only this much later
	nameTimeout = 2 * time.Second  // the lookup delays the reply it names, so not for long
)

// userName returns the Slack display name of user id (else the real name, else the
// handle), or "" when Slack does not say: the decision then shows the id, as before.
func (b *Bot) userName(ctx context.Context, id string) string {
	if name, ok := b.names.Get(id, nameKept); ok {
		return name
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
	b.names.Put(id, name)
	return name
}

// nameKept is how long a name is kept: "" (Slack did not say: no users:read scope, an
// error) only for nameMissTTL.
func nameKept(name string) time.Duration {
	if name == "" {
		return nameMissTTL
	}
	return nameTTL
}
