package cli

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/agentd/agentd/api"
)

// The per-agent part of agentctl memory stats, and the WHY column of memory search.

// agentStats keeps the stats of one agent (a name or id), after checking it exists.
func (a memoryVerbs) agentStats(ctx context.Context, ref string, all []api.MemoryAgentStats) ([]api.MemoryAgentStats, error) {
	ag, err := api.AgentRoute.Do(ctx, a.api(), ref, api.None{})
	if err != nil {
		return nil, agentErr(ref, err)
	}
	out := []api.MemoryAgentStats{}
	for _, s := range all {
		if s.AgentID == ag.ID {
			out = append(out, s)
		}
	}
	return out, nil
}

// printAgentStats shows each agent's memories: count, size, time span and kinds.
func (a memoryVerbs) printAgentStats(agents []api.MemoryAgentStats) error {
	if len(agents) == 0 {
		return nil
	}
	fmt.Fprintln(a.stdout)
	tw := table(a.stdout, "AGENT\tMEMORIES\tSIZE\tOLDEST\tNEWEST\tKINDS")
	for _, s := range agents {
		var kinds []string
		for _, k := range slices.Sorted(maps.Keys(s.Kinds)) {
			kinds = append(kinds, fmt.Sprintf("%s %d", k, s.Kinds[k]))
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%s\n", line(owner(s.Agent, s.AgentID)), s.Count, byteSize(s.Bytes), formatTime(s.Oldest), formatTime(s.Newest),
			strings.Join(kinds, ", "))
	}
	return tw.Flush()
}

// byteSize is n bytes for people: 512 B, 4.2 kB, 1.3 MB.
func byteSize(n int64) string {
	switch {
	case n < 1000:
		return fmt.Sprintf("%d B", n)
	case n < 1000*1000:
		return fmt.Sprintf("%.1f kB", float64(n)/1000)
	}
	return fmt.Sprintf("%.1f MB", float64(n)/1e6)
}

// why says in a few words why a search result matched.
func why(m *api.MemoryMatch) string {
	if m == nil {
		return "-"
	}
	var parts []string
	if len(m.Words) > 0 {
		parts = append(parts, strings.Join(m.Words, ",")+" ("+strings.Join(m.Fields, "+")+")")
	} else if len(m.Fields) > 0 {
		parts = append(parts, strings.Join(m.Fields, "+"))
	}
	if m.Date != "" {
		parts = append(parts, m.Date)
	}
	if m.Similar {
		parts = append(parts, "similar meaning")
	}
	return line(strings.Join(parts, "; "))
}
