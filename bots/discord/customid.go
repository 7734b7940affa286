package discord

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// Action is what a component or modal on a proposal message asks for.
type Action string

// Actions carried in custom IDs.
const (
	ActionApprove       Action = "approve"        // y
	ActionApproveN      Action = "approve_n"      // y -N
	ActionDeny          Action = "deny"           // n
	ActionFeedback      Action = "feedback"       // opens the feedback modal
	ActionFeedbackModal Action = "feedback_modal" // the modal's submit
	// ActionRewind and ActionRewindCancel answer a rewind's question; they name the step
	// (or rewind) whose before state the workspace gets back, its agent, and as hash the
	// first 16 hex of the workspace root the question showed the change against.
	ActionRewind       Action = "rewind"
	ActionRewindCancel Action = "rewind_cancel"
)

// MaxApproveN bounds N in Approve ×N, so a forged custom ID cannot approve without limit.
const MaxApproveN = 100

// customIDPrefix starts every custom ID agentd makes; the version lets a later format tell
// an old button apart instead of misreading it. v2 added the shown proposal's hash.
const customIDPrefix = "agentd:v2:"

// oldCustomIDPrefixes are formats agentd made before: their buttons are refused with a
// note saying so, never read as today's.
var oldCustomIDPrefixes = []string{"agentd:v1:"}

// noHash stands for "no hash" in a custom ID: a proposal shown without one.
const noHash = "-"

// hashRE matches the proposal hash prefix a custom ID carries (bots.HashLen hex).
var hashRE = regexp.MustCompile(`^[0-9a-f]{16}$`)

// proposalIDRE matches the daemon's proposal IDs ("p-" and hex, see daemon/agent newID);
// stepIDRE the ids a rewind's buttons name: a step's (its proposal's), a whole run's or
// a rewind's; agentIDRE the agent's they name with it.
var (
	proposalIDRE = regexp.MustCompile(`^p-[0-9a-f]{6,32}$`)
	stepIDRE     = regexp.MustCompile(`^(p-[0-9a-f]{6,32}|r-[0-9a-f]{6,32}|rw-[0-9a-z]{1,32})$`)
	agentIDRE    = regexp.MustCompile(`^a-[0-9a-f]{1,32}$`)
)

// CustomID is the parsed custom_id of a proposal button or of the feedback modal:
// "agentd:v2:ACTION:PROPOSAL[:N]:HASH", HASH being bots.HashLen hex characters of the
// shown proposal's hash or "-"; a rewind question's: "agentd:v2:ACTION:STEP:AGENT:HASH".
type CustomID struct {
	Action     Action
	ProposalID string
	N          int // only for ActionApproveN: how many proposals the approval covers (≥ 2)
	// AgentID is the agent whose step a rewind button names (rewind actions only): the
	// click acts on it, whatever agent its thread shows now.
	AgentID string
	// Hash is the first bots.HashLen hex characters of the hash of the proposal as shown;
	// the daemon refuses a decision carrying one that is not the proposal's. "" for none.
	Hash string
}

// CustomIDError says why a custom_id was refused.
type CustomIDError struct {
	ID     string
	Reason string
}

func (e *CustomIDError) Error() string {
	return fmt.Sprintf("discord: bad custom_id %q: %s", e.ID, e.Reason)
}

// String encodes c; it panics on a CustomID that would not parse back, which is a bug in
// the caller, never input.
func (c CustomID) String() string {
	s := c.encode()
	if _, err := ParseCustomID(s); err != nil {
		panic(err)
	}
	return s
}

// encode writes c without checking that it parses back.
func (c CustomID) encode() string {
	s := customIDPrefix + string(c.Action) + ":" + c.ProposalID
	if c.Action == ActionApproveN {
		s += ":" + strconv.Itoa(c.N)
	}
	if c.Action == ActionRewind || c.Action == ActionRewindCancel {
		s += ":" + c.AgentID
	}
	if c.Hash == "" {
		s += ":" + noHash
	} else {
		s += ":" + c.Hash
	}
	return s
}

// ParseCustomID reads a custom_id made by CustomID.String. Anything else — another bot's
// button, an older format, a forged or truncated ID — is a *CustomIDError.
func ParseCustomID(s string) (CustomID, error) {
	bad := func(format string, args ...any) (CustomID, error) {
		return CustomID{}, &CustomIDError{ID: s, Reason: fmt.Sprintf(format, args...)}
	}
	if len(s) > 100 {
		return bad("longer than Discord's 100 characters")
	}
	if !strings.HasPrefix(s, "agentd:") {
		return bad("not made by agentd")
	}
	for _, old := range oldCustomIDPrefixes {
		if strings.HasPrefix(s, old) {
			return bad("made by an older agentd (%s), before buttons carried the proposal's hash", strings.TrimSuffix(old, ":"))
		}
	}
	if !strings.HasPrefix(s, customIDPrefix) {
		return bad("made by another agentd version (want prefix %q)", customIDPrefix)
	}
	parts := strings.Split(strings.TrimPrefix(s, customIDPrefix), ":")
	c := CustomID{Action: Action(parts[0])}
	switch c.Action {
	case ActionApprove, ActionDeny, ActionFeedback, ActionFeedbackModal:
		if len(parts) != 3 {
			return bad("%s takes exactly a proposal ID and a hash", c.Action)
		}
	case ActionRewind, ActionRewindCancel:
		if len(parts) != 4 {
			return bad("%s takes a step's ID, its agent's and a hash (a button made before they named the agent: ask again with /agent rewind)", c.Action)
		}
		if !agentIDRE.MatchString(parts[2]) {
			return bad("%q is not an agent ID", parts[2])
		}
		c.AgentID = parts[2]
	case ActionApproveN:
		if len(parts) != 4 {
			return bad("approve_n takes a proposal ID, a count and a hash")
		}
		n, err := strconv.Atoi(parts[2])
		if err != nil || strconv.Itoa(n) != parts[2] {
			return bad("count %q is not a plain decimal number", parts[2])
		}
		if n < 2 || n > MaxApproveN {
			return bad("count %d is outside 2..%d", n, MaxApproveN)
		}
		c.N = n
	default:
		return bad("unknown action %q", parts[0])
	}
	if h := parts[len(parts)-1]; h != noHash {
		if !hashRE.MatchString(h) {
			return bad("%q is not a proposal or workspace hash (16 lowercase hex characters, or -)", h)
		}
		c.Hash = h
	}
	if c.Action == ActionRewind || c.Action == ActionRewindCancel {
		if !stepIDRE.MatchString(parts[1]) {
			return bad("%q is not a step to rewind to (a step's, a run's or a rewind's ID)", parts[1])
		}
	} else if !proposalIDRE.MatchString(parts[1]) {
		return bad("%q is not a proposal ID", parts[1])
	}
	c.ProposalID = parts[1]
	return c, nil
}
