package metrics

import (
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
)

func TestPoolMetrics(t *testing.T) {
	m := New()
	m.SetPool(func() ([]PoolHost, []PoolQueue) {
		return []PoolHost{
				{URL: "http://a:11434", Up: true, Slots: 4, Busy: 3, Models: 2, Served: 12, Failing: 1},
				{URL: "http://b:11434", Slots: 2},
			}, []PoolQueue{
				{Class: "interactive", Queued: 0},
				{Class: "batch", Queued: 5},
			}
	})
	m.QueueWait("batch", 1200*time.Millisecond)
	m.QueueWait("interactive", 2*time.Millisecond)
	want := `
# HELP agentd_model_queue_length Model calls waiting in the daemon's queue for a free slot, by class (interactive, batch).
# TYPE agentd_model_queue_length gauge
agentd_model_queue_length{class="batch"} 5
agentd_model_queue_length{class="interactive"} 0
# HELP agentd_ollama_host_busy Calls in flight on the Ollama host.
# TYPE agentd_ollama_host_busy gauge
agentd_ollama_host_busy{host="http://a:11434"} 3
agentd_ollama_host_busy{host="http://b:11434"} 0
# HELP agentd_ollama_host_failing_models Models the Ollama host, up, cannot run now (it answered HTTP 500): their calls go to other hosts for a backoff.
# TYPE agentd_ollama_host_failing_models gauge
agentd_ollama_host_failing_models{host="http://a:11434"} 1
agentd_ollama_host_failing_models{host="http://b:11434"} 0
# HELP agentd_ollama_host_up 1 while the Ollama host answers, 0 while its calls go to the other hosts.
# TYPE agentd_ollama_host_up gauge
agentd_ollama_host_up{host="http://a:11434"} 1
agentd_ollama_host_up{host="http://b:11434"} 0
`
	if err := testutil.GatherAndCompare(m.Registry(), strings.NewReader(want),
		"agentd_ollama_host_up", "agentd_ollama_host_busy", "agentd_ollama_host_failing_models", "agentd_model_queue_length"); err != nil {
		t.Error(err)
	}
	if n := testutil.CollectAndCount(m.queueWait); n != 2 {
		t.Errorf("%d queue wait series, want one per class", n)
	}
	var nilM *Metrics
	nilM.SetPool(nil)
	nilM.QueueWait("batch", time.Second)
}
