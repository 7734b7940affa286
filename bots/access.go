package bots

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Access says who may decide: user ids and groups (Slack user groups, Discord roles).
type Access struct {
	Users  []string
	Groups []string
}

func (a Access) empty() bool { return len(a.Users) == 0 && len(a.Groups) == 0 }

// Rules are one platform's rules: where the bot serves and who may decide there.
type Rules struct {
	// Teams are the workspaces (guilds) served; empty serves any.
	Teams []string
	// Channels are the channels served, with their own approvers (empty: Approvers).
	// Direct messages are served when DM is set, whatever Channels says.
	Channels map[string]Access
	DM       bool
	// Approvers may decide, start runs and control agents everywhere served, unless a
	// channel or an agent names its own.
	Approvers Access
	// Agents name approvers for one agent (by name); they replace the channel's.
	Agents map[string]Access
}

// groupChecker asks the platform whether a user is in a group.
type groupChecker interface {
	InGroup(ctx context.Context, user, group string) (bool, error)
}

// EncodeRef writes a Ref as a button value: "AGENT PROPOSAL COUNT [HASH]".
func EncodeRef(r Ref) string {
	s := r.AgentID + " " + r.ProposalID + " " + strconv.Itoa(r.Count)
	if r.Hash != "" {
		s += " " + r.Hash
	}
	return s
}

// ParseRef reads a button value written by EncodeRef.
func ParseRef(s string) (Ref, error) {
	f := strings.Fields(s)
	if len(f) != 3 && len(f) != 4 {
		return Ref{}, fmt.Errorf("bad proposal reference %q", s)
	}
	n, err := strconv.Atoi(f[2])
	if err != nil || n < 0 {
		return Ref{}, fmt.Errorf("bad count in proposal reference %q", s)
	}
	r := Ref{AgentID: f[0], ProposalID: f[1], Count: n}
	if len(f) == 4 {
		if len(f[3]) != HashLen || !isHex(f[3]) {
			return Ref{}, fmt.Errorf("bad proposal hash in reference %q", s)
		}
		r.Hash = f[3]
	}
	return r, nil
}

func isHex(s string) bool {
	for i := 0; i < len(s); i++ {
		if !strings.ContainsRune("0123456789abcdef", rune(s[i])) {
			return false
		}
	}
	return true
}

// ParseApprover reads one configured approver: a plain id ("U123", a Discord snowflake)
// or a mention pasted from chat — <@U123>, <@!123> (a user), <@&123> (a Discord role),
// <!subteam^S123|@team> (a Slack user group) — which is read as the id it names. group
// reports a mention of a role or user group; a plain id is the caller's to place. An
// entry that looks like a mention or a @name but names no id is an error saying what to
// write instead: it would never match anyone.
func ParseApprover(s string) (id string, group bool, err error) {
	s = strings.TrimSpace(s)
	bad := func() (string, bool, error) {
		return "", false, fmt.Errorf("approver %q is not a user, role or group id: write the id itself (Slack: the member ID from the person's profile; Discord: Copy User ID or Copy Role ID in developer mode), or paste a mention like <@U123> or <@&123>", s)
	}
	switch {
	case s == "":
		return bad()
	case strings.HasPrefix(s, "<") && strings.HasSuffix(s, ">"):
		inner := s[1 : len(s)-1]
		inner, _, _ = strings.Cut(inner, "|") // Slack adds the shown name: <@U123|ann>
		switch {
		case strings.HasPrefix(inner, "@&"):
			id, group = inner[2:], true
		case strings.HasPrefix(inner, "@!"):
			id = inner[2:]
		case strings.HasPrefix(inner, "@"):
			id = inner[1:]
		case strings.HasPrefix(inner, "!subteam^"):
			id, group = inner[len("!subteam^"):], true
		}
		if !plainID(id) {
			return bad()
		}
		return id, group, nil
	case !plainID(s):
		return bad()
	}
	return s, false, nil
}

// plainID reports whether s looks like a platform id: letters and digits only.
func plainID(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		if !('0' <= c && c <= '9' || 'A' <= c && c <= 'Z' || 'a' <= c && c <= 'z') {
			return false
		}
	}
	return true
}

// Serves reports whether the bot answers in w at all.
func (r Rules) Serves(w Where) bool {
	if w.DM && w.Team == "" {
		return r.DM // Discord's direct messages belong to no guild
	}
	if len(r.Teams) > 0 && !slices.Contains(r.Teams, w.Team) {
		return false
	}
	if w.DM {
		return r.DM
	}
	_, ok := r.Channels[w.Channel]
	return ok
}

// access returns the approvers for agent (a name, "" for none yet) in channel: the
// agent's own, else the channel's, else the platform's.
func (r Rules) access(channel, agent string) Access {
	if a, ok := r.Agents[agent]; ok && agent != "" && !a.empty() {
		return a
	}
	if a, ok := r.Channels[channel]; ok && !a.empty() {
		return a
	}
	return r.Approvers
}

// Allowed reports whether user may decide for agent in channel. Nobody may when no
// approver is configured: deciding is never open to everyone by accident. A group whose
// lookup fails lets nobody through (the error says which), but the other groups are
// still asked: one broken group must not lock out the members of the rest.
func (r Rules) Allowed(ctx context.Context, g groupChecker, channel, agent, user string) (bool, error) {
	a := r.access(channel, agent)
	if slices.Contains(a.Users, user) {
		return true, nil
	}
	var failed error
	for _, grp := range a.Groups {
		ok, err := g.InGroup(ctx, user, grp)
		if err != nil {
			failed = errors.Join(failed, fmt.Errorf("checking group %s: %w", grp, err))
			continue
		}
		if ok {
			return true, nil
		}
	}
	return false, failed
}
