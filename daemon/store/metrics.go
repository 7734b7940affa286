package store

import "fmt"

// Gauges are the store's counts a metrics scrape reports.
type Gauges struct {
	AgentsByState    map[string]int
	DecisionsPending int
	// AgentTokens and ScheduleTokens are token totals by agent and schedule name.
	AgentTokens    []NameTokens
	ScheduleTokens []NameTokens
}

// NameTokens is a name with its prompt and eval token totals (schedules keep one total,
// in Prompt).
type NameTokens struct {
	Name         string
	Prompt, Eval int64
}

// Gauges counts agents by state, the proposals waiting for a decision, and the token
// totals by agent and by schedule.
func (t *Tx) Gauges() (*Gauges, error) {
	g := &Gauges{AgentsByState: map[string]int{}}
	err := eachRow(t, "gauges", func(sc scanner) error {
		var s string
		var n int
		if err := sc.Scan(&s, &n); err != nil {
			return fmt.Errorf("store: gauges: %w", err)
		}
		g.AgentsByState[s] = n
		return nil
	}, `SELECT state, COUNT(*) FROM agents GROUP BY state`)
	if err != nil {
		return nil, err
	}
	if err := t.queryRow(`SELECT COUNT(*) FROM proposals WHERE status IN ('pending','interrupted')`).Scan(&g.DecisionsPending); err != nil {
		return nil, fmt.Errorf("store: gauges: %w", err)
	}
	if g.AgentTokens, err = t.nameTokens(`SELECT name, prompt_tokens, eval_tokens FROM agents`); err != nil {
		return nil, err
	}
	g.ScheduleTokens, err = t.nameTokens(`SELECT s.name, COALESCE(SUM(r.tokens), 0), 0 FROM schedules s
		LEFT JOIN schedule_runs r ON r.schedule_id = s.id GROUP BY s.id`)
	return g, err
}

func (t *Tx) nameTokens(q string) ([]NameTokens, error) {
	return queryAll(t, nil, "token totals", func(sc scanner) (NameTokens, error) {
		var n NameTokens
		if err := sc.Scan(&n.Name, &n.Prompt, &n.Eval); err != nil {
			return n, fmt.Errorf("store: token totals: %w", err)
		}
		return n, nil
	}, q)
}
