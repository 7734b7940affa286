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
	// Run is the run whose step it is; OtherRuns the agent's other runs with that step,
	// each a link to its own rewind page.
	Run       string
	OtherRuns []string
	// Shown names the workspace the change was worked out against (api.Rewind.From):
	// the form sends it back, and the daemon applies nothing to a workspace changed since.
	Shown   string
	Preview []string
	Diff    []diffLine
	Notice  string
}

// stepOf reads the step a rewind form names.
func stepOf(s string) (int, error) {
	n, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil || n < 1 {
		return 0, fmt.Errorf("rewind wants a step number from 1 up, as the history shows them, not %q", s)
	}
	return n, nil
}

// rewindPage shows what a rewind to before step ?to (of run ?run, by default the latest
// run with that step) would change, and asks.
func (c *Console) rewindPage(w http.ResponseWriter, r *http.Request) {
	agent := r.PathValue("agent")
	step, err := stepOf(r.URL.Query().Get("to"))
	if err != nil {
		c.back(w, r, "/agents/"+agent, err.Error())
		return
	}
	req := api.RewindRequest{To: step, Run: r.URL.Query().Get("run"), DryRun: true, By: c.user, Source: "web"}
	plan, err := c.svc.Rewind(r.Context(), agent, req)
	if err != nil {
		c.back(w, r, "/agents/"+agent, "not rewound: "+err.Error())
		return
	}
	v := rewindView{AgentID: plan.AgentID, Agent: line(plan.Agent), Step: step, Run: plan.Restore.RunID,
		OtherRuns: plan.Restore.OtherRuns, Shown: plan.From, Notice: line(plan.Restore.Notice)}
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
// which refuses it while a step runs, or when the workspace is no longer the one the
// page showed the change against, as it does for agentctl.
func (c *Console) rewind(w http.ResponseWriter, r *http.Request) {
	agent := r.PathValue("agent")
	to := "/agents/" + agent
	step, err := stepOf(r.PostFormValue("to"))
	if err != nil {
		c.back(w, r, to, err.Error())
		return
	}
	req := api.RewindRequest{To: step, Run: r.PostFormValue("run"), Shown: r.PostFormValue("shown"), By: c.user, Source: "web"}
	done, err := c.svc.Rewind(r.Context(), agent, req)
	if err != nil {
		c.back(w, r, to, "not rewound: "+err.Error())
		return
	}
	c.back(w, r, to, fmt.Sprintf("rewound to before step %d of run %s: %s (agentctl rewind %s --undo %s undoes it)",
		step, done.Restore.RunID, done.Restore.Summary, done.Agent, done.Undo))
}
