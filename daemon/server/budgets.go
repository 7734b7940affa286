package server

import (
	"github.com/agentd/agentd/daemon/config"
	"github.com/agentd/agentd/daemon/run"
)

// agentBudget is [agent]'s budget over each agent's runs.
func agentBudget(cfg *config.Config) run.Budget {
	return run.Budget{MaxSteps: cfg.Agent.MaxSteps, MaxTokens: cfg.Agent.MaxTokens, MaxWall: cfg.Agent.MaxTime.Duration,
		MaxDisk: int64(cfg.Agent.MaxDisk)}
}

// overrideBudget is [agents.NAME]'s budget: [agent]'s with the fields it sets replaced,
// or nil when it sets none.
func overrideBudget(cfg *config.Config, o config.AgentOverride) *run.Budget {
	if o.MaxSteps == nil && o.MaxTokens == nil && o.MaxTime == nil && o.MaxDisk == nil {
		return nil
	}
	b := agentBudget(cfg)
	if o.MaxSteps != nil {
		b.MaxSteps = *o.MaxSteps
	}
	if o.MaxTokens != nil {
		b.MaxTokens = *o.MaxTokens
	}
	if o.MaxTime != nil {
		b.MaxWall = o.MaxTime.Duration
	}
	if o.MaxDisk != nil {
		b.MaxDisk = int64(*o.MaxDisk)
	}
	return &b
}
