package agentprotocol

import (
	"encoding/json"
	"errors"
	"net/http/httptest"
	"testing"

	"github.com/agentd/agentd/api"
	"github.com/agentd/agentd/internal/display/displaytest"
)

// Everything a reply shows a person goes through the one escaping: a step's output (the
// model's words, its command and args, a result, the run's end), its name and input, an
// artifact's name and folder, a task's input and reasons, an error. No hostile string —
// an escape sequence, a bidi override, a zero-width character, a line break forging a
// line of the daemon's — acts; additional_output keeps the data as it is.
func TestRepliesShowHostileTextEscaped(t *testing.T) {
	h := New(Options{}).(*handler)
	for _, c := range displaytest.Cases {
		t.Run(c.Name, func(t *testing.T) {
			args, _ := json.Marshal(map[string]string{"path": "notes.txt", "contents": c.Text})
			thoughts := api.Thoughts{Speak: c.Text}
			rp := &api.Replay{Run: api.Run{ID: "r-1", Task: c.Text, Outcome: "finished", Reason: c.Text}, Steps: []api.ReplayStep{
				{Proposal: api.Proposal{ID: "p-1", Command: "write_file", Args: args, Thoughts: thoughts, Status: api.ProposalSucceeded, Result: c.Text}},
				{Proposal: api.Proposal{ID: "p-2", Command: "tool" + c.Text, Args: args, Thoughts: thoughts, Status: api.ProposalFeedback},
					Decisions: []api.Decision{{Kind: api.DecisionFeedback, Feedback: c.Text}}},
				{Proposal: api.Proposal{ID: "p-3", Command: "ask_user", Args: args, Thoughts: thoughts, Status: api.ProposalSucceeded, Result: c.Text}},
				{Proposal: api.Proposal{ID: "p-4", Command: "write_file", Args: args, Thoughts: thoughts, Status: api.ProposalPending}},
			}}
			m := &stepMapper{h: h, rp: rp, writers: map[string]bool{}}
			for i := range rp.Steps {
				s := m.step(i)
				for what, v := range map[string]string{"output": s.Output, "name": s.Name, "input": s.Input} {
					if leak := displaytest.Leak(v); leak != "" {
						t.Errorf("step %d's %s shows %s:\n%s", i+1, what, leak, v)
					}
				}
				if i == 0 && s.AdditionalOutput["result"] != c.Text {
					t.Errorf("additional_output's result %q, want the data as it is", s.AdditionalOutput["result"])
				}
			}
			a := h.artifactOf("dir"+c.Text+"/name"+c.Text, nil)
			for what, v := range map[string]string{"file_name": a.FileName, "relative_path": a.RelativePath} {
				if leak := displaytest.Leak(v); leak != "" {
					t.Errorf("an artifact's %s shows %s: %q", what, leak, v)
				}
			}
			if got, _ := artifactPath(a.ArtifactID); got != "dir"+c.Text+"/name"+c.Text {
				t.Errorf("the artifact's id names %q, want the file itself", got)
			}
			info := agentInfo(&api.Agent{Name: "a", State: api.StatePaused, StateReason: c.Text, RunID: "r-1"}, &rp.Run)
			for _, k := range []string{"state_reason", "reason"} {
				if leak := displaytest.Leak(info[k].(string)); leak != "" {
					t.Errorf("a task's %s shows %s: %q", k, leak, info[k])
				}
			}
			w := httptest.NewRecorder()
			h.writeError(w, httptest.NewRequest("GET", "/", nil), errors.New("the agent failed: "+c.Text))
			var body map[string]string
			json.Unmarshal(w.Body.Bytes(), &body)
			if leak := displaytest.Leak(body["error"]); leak != "" {
				t.Errorf("an error shows %s: %q", leak, body["error"])
			}
		})
	}
}
