package api

import (
	"context"
	"fmt"
)

// ListAgents returns one page of the agents, oldest first: at most p.Limit after the
// cursor p.After, with the cursor of the next page. Only tests read one page at a time;
// agentctl reads them all with EachAgent.
func (c *Client) ListAgents(ctx context.Context, q AgentQuery, p Page) (*AgentList, error) {
	if p.Limit <= 0 {
		return nil, fmt.Errorf("client: ListAgents wants a limit from 1 to %d: EachAgent reads them all", MaxListLimit)
	}
	l := &AgentList{Agents: []Agent{}}
	next, err := list(ctx, c, AgentsRoute, q, p, func(a Agent) error { l.Agents = append(l.Agents, a); return nil })
	l.Next = next
	return l, err
}
