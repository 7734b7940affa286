package api

// Why explains the decision on an agent's last decided proposal (agentctl why).
type Why struct {
	AgentID  string   `json:"agent_id"`
	Agent    string   `json:"agent"`
	Proposal Proposal `json:"proposal"`
	Decision Decision `json:"decision"`
	// Layer is where the pattern of a policy decision is kept: config, agent-config or
	// stored ("" for a person's decision, or a pattern no longer in the agent's policy).
	Layer string `json:"layer,omitempty"`
	// Grant is the grant the decision made or was approved by, as it stands now (nil
	// when the decision names none).
	Grant *Grant `json:"grant,omitempty"`
	// Reason says in one sentence who or what decided, and why.
	Reason string `json:"reason"`
}

// WhyRoute serves Service.Why.
var WhyRoute = register(Route[None, *Why]{Method: "GET", Path: "/v0/agents/{agent}/why",
	Call: byRef(Service.Why)})
