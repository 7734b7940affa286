package agent

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"regexp"
	"strings"
	"time"

	"github.com/agentd/agentd/api"
	"github.com/agentd/agentd/commands/permission"
	"github.com/agentd/agentd/daemon/agent/cycle"
	"github.com/agentd/agentd/daemon/run"
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

// onAgent is what fn makes of the agent ref names (resolve), in one transaction of in:
// the store's View to read, its Tx to write.
func onAgent[T any](ctx context.Context, in func(context.Context, func(*store.Tx) error) error, ref string, fn func(*store.Tx, *store.Agent) (T, error)) (T, error) {
	var out T
	err := in(ctx, func(tx *store.Tx) error {
		a, err := resolve(tx, ref)
		if err != nil {
			return err
		}
		out, err = fn(tx, a)
		return err
	})
	return out, err
}

// orNone is what a store read found, or nil without an error when it found none.
func orNone[T any](v *T, err error) (*T, error) {
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil
	}
	return v, err
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
	p, err := orNone(tx.OpenProposal(a.ID))
	if err != nil {
		return nil, err
	}
	q, err := orNone(tx.Question(a.ID))
	if err != nil {
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

// checkRunOptions validates opt and returns its patterns in canonical form.
func checkRunOptions(opt *run.Options) ([]string, error) {
	b := opt.Budget
	if b.MaxSteps < 0 || b.MaxTokens < 0 || b.MaxWall < 0 {
		return nil, badRequest("budgets cannot be negative")
	}
	if opt.Policy != nil {
		if err := checkPolicy(*opt.Policy); err != nil {
			return nil, err
		}
	}
	var pats []string
	for _, p := range opt.Allow {
		pat, err := permission.Parse(p)
		if err != nil {
			return nil, badRequest("allow pattern: %v", err)
		}
		pats = append(pats, pat.String())
	}
	return pats, nil
}

// requestOptions are the run options of an API request's budget: nil when it sets none.
func requestOptions(b *api.Budget) (*run.Options, error) {
	if b == nil || *b == (api.Budget{}) {
		return nil, nil
	}
	switch {
	case b.MaxSteps < 0:
		return nil, badRequest("budget max_steps %d: want 0 (no bound) or more", b.MaxSteps)
	case b.MaxTokens < 0:
		return nil, badRequest("budget max_tokens %d: want 0 (no bound) or more", b.MaxTokens)
	}
	opt := &run.Options{Budget: run.Budget{MaxSteps: b.MaxSteps, MaxTokens: b.MaxTokens}, By: "the request"}
	if t := strings.TrimSpace(b.MaxTime); t != "" {
		d, err := time.ParseDuration(t)
		if err != nil || d < time.Second {
			return nil, badRequest("budget max_time %q: want a duration of at least 1s such as 30m or 1h30m", b.MaxTime)
		}
		opt.Budget.MaxWall = d
	}
	return opt, nil
}

// family is the agent and its helpers, theirs, and so on, parents first.
func family(tx *store.Tx, root *store.Agent) ([]*store.Agent, error) {
	out := []*store.Agent{root}
	for i := 0; i < len(out) && i < 1000; i++ {
		hs, err := tx.Helpers(out[i].ID)
		if err != nil {
			return nil, err
		}
		out = append(out, hs...)
	}
	return out, nil
}

// helpersIdle refuses a rewind of agent a while one of its helpers, at any depth, runs.
// A rewind puts the whole workspace back, agents/ included — a helper's end is a step
// of its parent, so its work is rewound with it — and a helper running meanwhile would
// have its folder rewritten under it. Leaving agents/ out instead would make every
// rewind inexact; refusing until the helpers end keeps it exact.
func helpersIdle(tx *store.Tx, a *store.Agent) error {
	fam, err := family(tx, a)
	if err != nil {
		return err
	}
	var busy []string
	for _, h := range fam[1:] {
		if cycle.Active(h.State) {
			busy = append(busy, h.Name)
		}
	}
	if len(busy) == 0 {
		return nil
	}
	return conflict("agent %s has helpers running (%s): a rewind rewrites %s/, where they work; try again when they end, or stop them first (`agentctl stop %s`)",
		a.Name, strings.Join(busy, ", "), helpersFolder, busy[0])
}
