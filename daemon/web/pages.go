package web

import (
	"cmp"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/agentd/agentd/api"
)

// agentsPageRows is how many agents the agents page lists at once: a page of thousands
// of live rows is slow to load and to keep live in a browser.
const agentsPageRows = 200

// agentsView is the agents page: one row each for a page of the agents, oldest first,
// kept live by the all-agents stream.
type agentsView struct {
	Rows  []agentRow
	Since int64
	// Paged is set when the agents do not fit one page; Next is the next page's URL
	// ("" on the last), and Later is set on a page after the first.
	Paged, Later bool
	Next         string
	// Last is set on the last page: agents created while it is open are added to it.
	Last bool
}

func (v agentsView) events() string { return "/events?since=" + strconv.FormatInt(v.Since, 10) }

func (c *Console) agentsPage(w http.ResponseWriter, r *http.Request) {
	since := c.latest.Load() // before reading: what changes after is streamed
	after := r.FormValue("after")
	l, err := c.svc.ListAgents(r.Context(), api.AgentQuery{Brief: true}, api.Page{After: after, Limit: agentsPageRows})
	if err != nil {
		c.fail(w, err)
		return
	}
	v := agentsView{Since: since, Rows: make([]agentRow, len(l.Agents)), Later: after != "", Last: l.Next == ""}
	v.Paged = v.Later || !v.Last
	if l.Next != "" {
		v.Next = "/?after=" + url.QueryEscape(l.Next)
	}
	for i := range l.Agents {
		v.Rows[i] = rowOf(&l.Agents[i])
	}
	c.render(w, r, "agents", v)
}

// agentView is an agent's page: what waits for a decision, the live stream, the history.
type agentView struct {
	Agent   agentRow
	Task    string
	Goals   []string
	Waiting waitingView
	History []*episodeView
	Runs    []runLink
	Since   int64
}

// runLink is one of the agent's runs, linking to its replay.
type runLink struct {
	ID, Task, Started, Outcome string
	Steps                      int
}

func (v agentView) events() string {
	return "/events?agent=" + url.QueryEscape(v.Agent.ID) + "&since=" + strconv.FormatInt(v.Since, 10)
}

func (c *Console) agentPage(w http.ResponseWriter, r *http.Request) {
	since := c.latest.Load()
	a, err := c.svc.Agent(r.Context(), r.PathValue("agent"))
	if err != nil {
		c.fail(w, err)
		return
	}
	hist, err := c.svc.History(r.Context(), a.ID)
	if err != nil {
		c.fail(w, err)
		return
	}
	v := agentView{Agent: rowOf(a), Task: text(a.Task), Waiting: waitingOf(a, csrfOf(r)), Since: since}
	for _, g := range a.Goals {
		v.Goals = append(v.Goals, text(g))
	}
	for _, run := range a.Runs {
		v.Runs = append(v.Runs, runLink{ID: run.ID, Task: line(run.Task), Started: ago(run.StartedAt), Outcome: line(string(run.Outcome)), Steps: run.Steps})
	}
	for i := len(hist) - 1; i >= 0; i-- { // newest first
		v.History = append(v.History, episodeOf(&hist[i]))
	}
	c.render(w, r, "agent", v)
}

type memoryView struct {
	Query, Agent string
	Results      []memoryRow
	Searched     bool
	// Note says why the search found nothing to show (memory off, a bad query).
	Note string
}

type memoryRow struct {
	Score, BM25, Similarity string
	Kind, Source, Agent     string
	Text                    string
	// Why says what the result matched: its words, where, its day.
	Why string
}

// matched describes a search result's match, like `words "backup", "nightly" in text`.
func matched(m *api.MemoryMatch) string {
	if m == nil {
		return ""
	}
	var parts []string
	if len(m.Words) > 0 {
		parts = append(parts, "words "+strings.Join(m.Words, ", "))
	}
	if len(m.Fields) > 0 {
		parts = append(parts, "in "+strings.Join(m.Fields, ", "))
	}
	if m.Date != "" {
		parts = append(parts, "dated "+m.Date)
	}
	if m.Similar {
		parts = append(parts, "similar in meaning")
	}
	return line(strings.Join(parts, " · "))
}

func (c *Console) memoryPage(w http.ResponseWriter, r *http.Request) {
	v := memoryView{Query: r.FormValue("q"), Agent: r.FormValue("agent")}
	if v.Query != "" {
		ms, err := c.svc.SearchMemory(r.Context(), api.MemorySearchRequest{Query: v.Query, Agent: v.Agent, K: 25})
		if err != nil && api.StatusOf(err) == http.StatusInternalServerError {
			c.fail(w, err)
			return
		}
		if err != nil { // memory off, an unknown agent: the person fixes the search
			v.Note = line(err.Error())
		}
		v.Searched = err == nil
		for _, m := range ms {
			v.Results = append(v.Results, memoryRow{Score: fmt.Sprintf("%.3f", m.Score), BM25: fmt.Sprintf("%.2f", m.BM25),
				Similarity: fmt.Sprintf("%.2f", m.Similarity), Kind: m.Kind, Source: line(m.Source), Agent: line(cmp.Or(m.Agent, "shared")), Text: text(m.Text), Why: matched(m.Why)})
		}
	}
	c.render(w, r, "memory", v)
}

type teamRow struct {
	ID, Workflow, Task, Status, State, Phase, Waiting string
	Turns, MaxTurns                                   int
	// Roles are the role agents, linking to their pages.
	Roles []roleLink
}

type roleLink struct{ Role, AgentID string }

func (c *Console) teamsPage(w http.ResponseWriter, r *http.Request) {
	ts, err := c.svc.Teams(r.Context())
	if err != nil {
		c.fail(w, err)
		return
	}
	rows := make([]teamRow, len(ts))
	for i, t := range ts {
		rows[i] = teamRow{ID: t.ID, Workflow: line(t.Workflow), Task: text(t.Task), Status: line(t.Status), State: line(t.State),
			Phase: line(t.Phase), Waiting: line(t.Waiting), Turns: t.Turns, MaxTurns: t.MaxTurns}
		for role, id := range t.Agents {
			rows[i].Roles = append(rows[i].Roles, roleLink{line(role), id})
		}
		slices.SortFunc(rows[i].Roles, func(a, b roleLink) int { return cmp.Compare(a.Role, b.Role) })
	}
	c.render(w, r, "teams", rows)
}

type auditView struct {
	Agent, Kind string
	Entries     []auditRow
	Note        string
}

type auditRow struct {
	api.AuditEntry
	Agent, Detail string
}

func (c *Console) auditPage(w http.ResponseWriter, r *http.Request) {
	v := auditView{Agent: r.FormValue("agent"), Kind: r.FormValue("kind")}
	es, err := c.svc.Audit(r.Context(), api.AuditQuery{Agent: v.Agent, Kind: v.Kind, Limit: 200})
	if err != nil && api.StatusOf(err) == http.StatusInternalServerError {
		c.fail(w, err)
		return
	}
	if err != nil { // an unknown agent: the person fixes the filter
		v.Note = line(err.Error())
	}
	for i := len(es) - 1; i >= 0; i-- { // newest first
		e := es[i]
		v.Entries = append(v.Entries, auditRow{AuditEntry: e, Agent: line(cmp.Or(e.Agent, e.AgentID)), Detail: text(compact(e.Detail))})
	}
	c.render(w, r, "audit", v)
}

func compact(raw json.RawMessage) string {
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return string(raw)
	}
	b, _ := json.Marshal(v)
	return string(b)
}

type doctorView struct {
	Status *api.Status
	States []stateCount
	Checks []api.Check
}

type stateCount struct {
	State string
	N     int
}

func (c *Console) doctorPage(w http.ResponseWriter, r *http.Request) {
	st, err := c.svc.Status(r.Context())
	if err != nil {
		c.fail(w, err)
		return
	}
	rep, err := c.svc.Doctor(r.Context())
	if err != nil {
		c.fail(w, err)
		return
	}
	v := doctorView{Status: st, Checks: rep.Checks}
	for s, n := range st.Agents {
		v.States = append(v.States, stateCount{s, n})
	}
	slices.SortFunc(v.States, func(a, b stateCount) int { return cmp.Compare(a.State, b.State) })
	c.render(w, r, "doctor", v)
}
