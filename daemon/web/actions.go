package web

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/agentd/agentd/api"
)

// maxForm bounds a form body: the largest is a feedback text of api.MaxTextBytes.
const maxForm = 64 << 10

// decide records a person's decision on the proposal the page showed: the form carries
// the proposal's id and hash, and the daemon's one Decide refuses it when the agent has
// moved on, as it does for agentctl and chat.
func (c *Console) decide(w http.ResponseWriter, r *http.Request) {
	agent := r.PathValue("agent")
	to := "/agents/" + agent
	req := api.DecideRequest{ProposalID: r.PostFormValue("proposal_id"), Hash: r.PostFormValue("hash"),
		By: c.user, Source: "web"}
	switch r.PostFormValue("kind") {
	case "approve":
		req.Kind = api.DecisionApprove
		if n := r.PostFormValue("count"); n != "" {
			count, err := strconv.Atoi(n)
			if err != nil || count < 1 {
				c.back(w, r, to, fmt.Sprintf("approve ×N wants a whole number of steps from 1 up, not %q", n))
				return
			}
			req.Count = count
		}
	case "deny":
		req.Kind = api.DecisionDeny
	case "feedback":
		req.Kind, req.Feedback = api.DecisionFeedback, strings.TrimSpace(r.PostFormValue("feedback"))
		if req.Feedback == "" {
			c.back(w, r, to, "feedback needs some text: say what the agent should do instead")
			return
		}
		if len(req.Feedback) > api.MaxTextBytes {
			c.back(w, r, to, tooLong("feedback", req.Feedback))
			return
		}
	default:
		c.back(w, r, to, "pick approve, deny or feedback")
		return
	}
	if req.ProposalID == "" || req.Hash == "" {
		c.back(w, r, to, "this form names no proposal: reload the page and decide on the one shown")
		return
	}
	note := ""
	if _, err := c.svc.Decide(r.Context(), agent, req); err != nil {
		note = "not decided: " + err.Error()
	}
	c.back(w, r, to, note)
}

// answer answers the agent's pending ask_user question.
func (c *Console) answer(w http.ResponseWriter, r *http.Request) {
	agent := r.PathValue("agent")
	to := "/agents/" + agent
	req := api.AnswerRequest{ProposalID: r.PostFormValue("proposal_id"), Text: strings.TrimSpace(r.PostFormValue("text")), By: c.user}
	switch {
	case req.Text == "":
		c.back(w, r, to, "an answer needs some text")
		return
	case len(req.Text) > api.MaxTextBytes:
		c.back(w, r, to, tooLong("answer", req.Text))
		return
	}
	note := ""
	if err := c.svc.Answer(r.Context(), agent, req); err != nil {
		note = "not answered: " + err.Error()
	}
	c.back(w, r, to, note)
}

func tooLong(what, s string) string {
	return fmt.Sprintf("your %s is %d bytes; the limit is %d bytes (characters outside ASCII take 2–4): shorten it and send again",
		what, len(s), api.MaxTextBytes)
}
