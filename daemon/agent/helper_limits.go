package agent

import (
	"errors"
	"fmt"
	"strings"

	"github.com/agentd/agentd/commands"
	"github.com/agentd/agentd/daemon/agent/policy"
	"github.com/agentd/agentd/daemon/store"
)

// roomForHelper refuses another helper of parent named key: one nested too deep, one
// too many, or a name its helpers have already.
func roomForHelper(tx *store.Tx, parent *store.Agent, key string, maxDepth, maxHelpers int) error {
	const cmd = commands.StartAgent
	depth, err := depthTx(tx, parent)
	if err != nil {
		return err
	}
	if depth+1 > maxDepth {
		return fmt.Errorf("%s: helpers may be nested %d deep at most, and you are a helper %d deep: do this sub-task yourself",
			cmd, maxDepth, depth)
	}
	hs, err := tx.Helpers(parent.ID)
	if err != nil {
		return err
	}
	for _, x := range hs {
		if keyOf(x.Name) == key {
			return fmt.Errorf("%s: you have a helper named %s already (%s): give it the task with message_agent, or pick another name", cmd, key, x.State)
		}
	}
	if len(hs) >= maxHelpers {
		return fmt.Errorf("%s: you have %d helpers, the most allowed: remove one with delete_agent first (see list_agents)", cmd, len(hs))
	}
	return nil
}

// depthTx is how many parents a has (0 for an agent people started).
func depthTx(tx *store.Tx, a *store.Agent) (int, error) {
	d := 0
	for pid := a.ParentID; pid != "" && d < maxAncestors; d++ {
		p, err := tx.Agent(pid)
		if errors.Is(err, store.ErrNotFound) {
			return d + 1, nil
		} else if err != nil {
			return 0, err
		}
		pid = p.ParentID
	}
	return d, nil
}

// maxAncestors bounds walks up the parent links, as the policy bounds its own.
const maxAncestors = policy.MaxAncestors

// keyOf is a helper's key: its name without its parent's.
func keyOf(name string) string {
	return name[strings.LastIndexByte(name, '/')+1:]
}

// helperDepthFilter leaves start_agent and message_agent out of the commands of an agent
// nested as deep as helpers may be (maxDepth): the model is never offered a command that
// can only fail (helperEnv.Start still refuses a direct call). A helper's depth is the number of
// slashes in its name, which start_agent fixes as "<parent>/<key>".
func helperDepthFilter(a *store.Agent, set commands.Set, maxDepth int) commands.Set {
	if strings.Count(a.Name, "/") < maxDepth {
		return set
	}
	out := make(commands.Set, 0, len(set))
	for _, c := range set {
		if n := c.Spec().Name; n != commands.StartAgent && n != commands.MessageAgent {
			out = append(out, c)
		}
	}
	return out
}
