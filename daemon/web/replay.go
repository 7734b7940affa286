package web

import (
	"fmt"
	"net/http"
)

// replayView is a run step by step: each proposal as it was shown, the decisions on
// it, and what came of it.
type replayView struct {
	RunID, AgentID, Agent, Task, Outcome string
	Started, Ended                       string
	Steps                                []replayStep
}

type replayStep struct {
	Proposal  *proposalView
	Decisions []string
	Episode   *episodeView
}

func (c *Console) replayPage(w http.ResponseWriter, r *http.Request) {
	rp, err := c.svc.Replay(r.Context(), r.PathValue("run"))
	if err != nil {
		c.fail(w, err)
		return
	}
	v := replayView{RunID: rp.Run.ID, AgentID: rp.Run.AgentID, Agent: line(rp.Run.Agent), Task: text(rp.Run.Task),
		Outcome: line(string(rp.Run.Outcome)), Started: ago(rp.Run.StartedAt), Ended: ago(rp.Run.EndedAt)}
	for _, st := range rp.Steps {
		s := replayStep{Proposal: proposalOf(&st.Proposal)}
		for _, d := range st.Decisions {
			s.Decisions = append(s.Decisions, line(fmt.Sprintf("%s by %s (%s) at %s", d.Kind, d.By, d.Source, ago(d.At))))
		}
		if st.Episode != nil {
			s.Episode = episodeOf(st.Episode)
		}
		v.Steps = append(v.Steps, s)
	}
	c.render(w, r, "replay", v)
}
