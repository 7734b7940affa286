package agent

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"regexp"
	"strings"

	"github.com/agentd/agentd/api"
	"github.com/agentd/agentd/daemon/store"
	"github.com/agentd/agentd/internal/display"
)

// The names every part uses to find an agent, check a request and show it: below the
// parts, so a part that needs them does not reach up into the supervisor or the runs.

// resolve finds an agent by id, unique name, or the temporary name it was created
// with (see tempName): `agentctl run` prints that name before the model renames the
// agent, and a name a person has been shown must keep working.
func resolve(tx *store.Tx, ref string) (*store.Agent, error) {
	a, err := tx.Agent(ref)
	if errors.Is(err, store.ErrNotFound) {
		a, err = tx.AgentByName(ref)
	}
	if errors.Is(err, store.ErrNotFound) {
		a, err = byTempName(tx, ref)
	}
	if errors.Is(err, store.ErrNotFound) {
		return nil, noAgent(tx, ref)
	}
	return a, err
}

// noAgent is the error for a ref that names no agent, with the closest name when ref
// looks like a typo of one.
func noAgent(tx *store.Tx, ref string) error {
	names, err := tx.AgentNames()
	if err != nil {
		return err
	}
	return notFound("no agent %q%s: see `agentctl ls`", ref, display.DidYouMean(ref, names))
}

// tempNamePrefix starts the name an agent gets until its profile names it.
const tempNamePrefix = "agent-"

// tempName is the name an agent has until the model names it: "agent-" and the first
// six hex digits of its id, so the id alone recovers it after a rename.
func tempName(id string) string { return tempNamePrefix + id[2:8] }

// byTempName finds the agent whose temporary name was ref, though it has been renamed.
func byTempName(tx *store.Tx, ref string) (*store.Agent, error) {
	digits, ok := strings.CutPrefix(ref, tempNamePrefix)
	if !ok || len(digits) != 6 || strings.Trim(digits, "0123456789abcdef") != "" {
		return nil, store.ErrNotFound
	}
	all, err := tx.Agents()
	if err != nil {
		return nil, err
	}
	var found *store.Agent
	for _, a := range all {
		if len(a.ID) < 8 || tempName(a.ID) != ref {
			continue
		}
		if found != nil {
			return nil, conflict("%q was the first name of both %s and %s: use the id or the current name", ref, found.ID, a.ID)
		}
		found = a
	}
	if found == nil {
		return nil, store.ErrNotFound
	}
	return found, nil
}

// known is view for a caller that knows the agent's pending proposal and question
// already, saving the two reads on the agent cycle's hot path.
func known(a *store.Agent, pending *api.Proposal, q *api.Question) *api.Agent {
	out := a.Agent
	out.Pending, out.Question = pending, q
	return &out
}

// view loads the agent with its pending proposal and question, as the API shows it.
func view(tx *store.Tx, a *store.Agent) (*api.Agent, error) {
	p, err := tx.OpenProposal(a.ID)
	if errors.Is(err, store.ErrNotFound) {
		p = nil
	} else if err != nil {
		return nil, err
	}
	q, err := tx.Question(a.ID)
	if errors.Is(err, store.ErrNotFound) {
		q = nil
	} else if err != nil {
		return nil, err
	}
	return viewOf(a, p, q), nil
}

// viewOf is a's API view given its open proposal and question (nil when none).
func viewOf(a *store.Agent, open *api.Proposal, q *api.Question) *api.Agent {
	out := a.Agent
	if open != nil && open.Status.Decidable() {
		out.Pending = open
	}
	out.Question = q
	return &out
}

// nameRE is what an agent name may be.
var nameRE = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,39}$`)

func badRequest(format string, args ...any) error {
	return api.Errorf(api.ErrBadRequest, format, args...)
}

func conflict(format string, args ...any) error {
	return api.Errorf(api.ErrConflict, format, args...)
}

func notFound(format string, args ...any) error {
	return api.Errorf(api.ErrNotFound, format, args...)
}

// checkPolicy refuses a policy no run could follow.
func checkPolicy(p api.Policy) error {
	switch p.Mode {
	case "ask", "auto", "continuous":
	default:
		return badRequest("policy mode %q: use ask, auto or continuous", p.Mode)
	}
	if p.AutoSteps < 0 || p.ContinuousLimit < 0 {
		return badRequest("policy step counts cannot be negative")
	}
	return nil
}

// Hash is the proposal hash: sha256 over the command name and its canonical args.
func Hash(command string, canonicalArgs []byte) string {
	h := sha256.New()
	h.Write([]byte(command))
	h.Write([]byte{0})
	h.Write(canonicalArgs)
	return hex.EncodeToString(h.Sum(nil))
}
