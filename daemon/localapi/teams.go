package localapi

import (
	"context"
	"net/http"

	"github.com/agentd/agentd/daemon/client"
)

// TeamService is the team runs' part of the API (SOP workflows of several roles). Team
// references are a team run's id.
type TeamService interface {
	// Teams lists team runs, newest first, without transcripts.
	Teams(ctx context.Context) ([]client.TeamRun, error)
	// StartTeam checks the workflow (problems are ErrBadRequest naming file:line) and
	// starts a run of it.
	StartTeam(ctx context.Context, req client.TeamRunRequest) (*client.TeamRun, error)
	// Team returns one team run with its transcript.
	Team(ctx context.Context, ref string) (*client.TeamRun, error)
	// StopTeam stops a running team run and the role agent's run it waits for.
	StopTeam(ctx context.Context, ref string) (*client.TeamRun, error)
	// PlanTeam asks the planner for a workflow for a task.
	PlanTeam(ctx context.Context, req client.TeamPlanRequest) (*client.TeamPlan, error)
	// SubscribeTeam streams a team run's transcript as EventTeam events: the entries
	// after seq since, then each new one; the channel closes after the run's end (or
	// when the follower falls behind and must come back with the last seq it saw).
	SubscribeTeam(ref string, since int64) (events <-chan client.Event, cancel func(), err error)
}

func (h *handler) teams(w http.ResponseWriter, r *http.Request) error {
	list, err := h.svc.Teams(r.Context())
	if err != nil {
		return err
	}
	return reply(w, http.StatusOK, nonNil(list))
}

func (h *handler) startTeam(w http.ResponseWriter, r *http.Request) error {
	var req client.TeamRunRequest
	if err := decodeBody(w, r, &req); err != nil {
		return err
	}
	t, err := h.svc.StartTeam(r.Context(), req)
	if err != nil {
		return err
	}
	return reply(w, http.StatusCreated, t)
}

func (h *handler) team(w http.ResponseWriter, r *http.Request) error {
	t, err := h.svc.Team(r.Context(), r.PathValue("team"))
	if err != nil {
		return err
	}
	return reply(w, http.StatusOK, t)
}

func (h *handler) stopTeam(w http.ResponseWriter, r *http.Request) error {
	t, err := h.svc.StopTeam(r.Context(), r.PathValue("team"))
	if err != nil {
		return err
	}
	return reply(w, http.StatusOK, t)
}

func (h *handler) planTeam(w http.ResponseWriter, r *http.Request) error {
	var req client.TeamPlanRequest
	if err := decodeBody(w, r, &req); err != nil {
		return err
	}
	p, err := h.svc.PlanTeam(r.Context(), req)
	if err != nil {
		return err
	}
	return reply(w, http.StatusOK, p)
}
