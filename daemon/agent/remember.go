package agent

import (
	"github.com/agentd/agentd/api"
	"github.com/agentd/agentd/daemon/store"
)

// episodeRecorder remembers finished steps (Supervisor.recordEpisode): the history
// that shows them, the counters that count them, and the long-term memory.
type episodeRecorder struct {
	history  *episodeHistory
	counters *stepCounters
	memory   *memoryService
}

// record stores a finished step: the episode, the goal state it advances and its
// memory, all in tx. Every place that ends a step goes through here.
func (e episodeRecorder) record(tx *store.Tx, agentID string, p *api.Proposal, ep *api.Episode) error {
	if err := tx.InsertEpisode(agentID, ep); err != nil {
		return err
	}
	tx.AfterCommit(func() { e.history.gens.bump(agentID) })
	e.counters.countStep(tx, ep.Outcome)
	if err := updateGoal(tx, agentID, p, ep); err != nil {
		return err
	}
	return e.memory.remember(tx, episodeMemory(agentID, ep))
}
