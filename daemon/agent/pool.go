package agent

import (
	"fmt"
	"strings"
	"time"

	"github.com/agentd/agentd/api"
	"github.com/agentd/agentd/daemon/llm"
	"github.com/agentd/agentd/internal/display"
)

// poolStatus converts the model client's pool to what status shows; nil without a pool.
func poolStatus(ps *llm.PoolStatus) ([]api.OllamaHostStatus, []api.ModelQueueStatus) {
	if ps == nil {
		return nil, nil
	}
	hosts := make([]api.OllamaHostStatus, len(ps.Hosts))
	for i, h := range ps.Hosts {
		hosts[i] = api.OllamaHostStatus{URL: h.URL, Up: h.Up, Slots: h.Slots, Busy: h.Busy, Served: h.Served,
			Models: h.Models, ModelsConfigured: h.Configured, RetryInMS: h.RetryIn.Milliseconds(), Error: h.Error, CheckedAt: h.Checked}
		for _, f := range h.Failing {
			hosts[i].Failing = append(hosts[i].Failing, api.OllamaModelFailing{Model: f.Model, RetryInMS: f.RetryIn.Milliseconds(), Error: f.Error})
		}
	}
	queue := make([]api.ModelQueueStatus, len(ps.Queue))
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	for i, q := range ps.Queue {
		queue[i] = api.ModelQueueStatus{Class: q.Class, Queued: q.Queued, Served: q.Served,
			WaitP50MS: ms(q.WaitP50), WaitP99MS: ms(q.WaitP99), WaitMaxMS: ms(q.WaitMax)}
	}
	return hosts, queue
}

// hostChecks are agentctl doctor's findings on each server of a pool of more than one:
// a host down fails when no other is up, and warns when the others carry its calls.
func hostChecks(ps *llm.PoolStatus) []api.Check {
	if ps == nil || len(ps.Hosts) < 2 {
		return nil // one host: the ollama check says it all
	}
	up := 0
	for _, h := range ps.Hosts {
		if h.Up {
			up++
		}
	}
	var out []api.Check
	for _, h := range ps.Hosts {
		c := api.Check{Name: "ollama host", Status: api.CheckOK}
		if h.Up {
			c.Detail = fmt.Sprintf("%s up, %d of %d slots busy, %s served", h.URL, h.Busy, h.Slots, display.Count(h.Served, "call", "calls"))
			if len(h.Models) > 0 {
				c.Detail += "; models: " + strings.Join(h.Models, ", ")
			} else if h.Configured {
				c.Detail += "; no models"
			}
			for _, f := range h.Failing {
				c.Status = api.CheckWarn
				c.Detail += fmt.Sprintf("; cannot run %s now (next try in %s): %s", f.Model, f.RetryIn.Round(100*time.Millisecond), f.Error)
				c.Fix = "read that server's log (`journalctl -u ollama`): a model too big for its memory is the usual cause; pull a smaller one or free memory"
			}
		} else {
			c.Status = api.CheckWarn
			if up == 0 {
				c.Status = api.CheckFail
			}
			c.Detail = fmt.Sprintf("%s down (next try in %s): %s", h.URL, h.RetryIn.Round(100*time.Millisecond), h.Error)
			c.Fix = "start Ollama there (`ollama serve`), or remove it from [[ollama.hosts]] in the config"
		}
		out = append(out, c)
	}
	return out
}
