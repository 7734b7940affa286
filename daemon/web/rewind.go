package web

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/agentd/agentd/api"
)

// rewindView is the question before a rewind: what putting the workspace back as before
// the step would change, rendered as proposal previews are, and the form that does it.
type rewindView struct {
	AgentID, Agent string
	Step           int
	Preview        []string
	Diff           []diffLine
	Notice         string
}

// stepOf reads the step a rewind form names.
func stepOf(s string) (int, error) {
	n, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil || n < 1 {
		return 0, fmt.Errorf("rewind wants a step number from 1 up, as the history shows them, not %q", s)
	}
	return n, nil
}

// rewindPage shows what a rewind to before step ?to would change, and asks.
func (c *Console) rewindPage(w http.ResponseWriter, r *http.Request) {
	agent := r.PathValue("agent")
	step, err := stepOf(r.URL.Query().Get("to"))
	if err != nil {
		c.back(w, r, "/agents/"+agent, err.Error())
		return
	}
	plan, err := c.svc.Rewind(r.Context(), agent, api.RewindRequest{To: step, DryRun: true, By: c.user, Source: "web"})
	if err != nil {
		c.back(w, r, "/agents/"+agent, "not rewound: "+err.Error())
		return
	}
	v := rewindView{AgentID: plan.AgentID, Agent: line(plan.Agent), Step: step, Notice: line(plan.Restore.Notice)}
	lines, diff := plan.Restore.Preview.Render() // already escaped for display
	v.Preview = lines
	if diff != "" {
		for _, l := range strings.Split(diff, "\n") {
			v.Diff = append(v.Diff, diffLine{Class: diffClass(l), Text: l})
		}
	}
	c.render(w, r, "rewind", v)
}

// rewind puts the workspace back as before the form's step: the daemon's one Rewind,
// which refuses it while a step runs, as it does for agentctl.
func (c *Console) rewind(w http.ResponseWriter, r *http.Request) {
	agent := r.PathValue("agent")
	to := "/agents/" + agent
	step, err := stepOf(r.PostFormValue("to"))
	if err != nil {
		c.back(w, r, to, err.Error())
		return
	}
	done, err := c.svc.Rewind(r.Context(), agent, api.RewindRequest{To: step, By: c.user, Source: "web"})
	if err != nil {
		c.back(w, r, to, "not rewound: "+err.Error())
		return
	}
	c.back(w, r, to, fmt.Sprintf("rewound to before step %d: %s (agentctl rewind %s --undo %s undoes it)", step, done.Restore.Summary, done.Agent, done.Undo))
}
