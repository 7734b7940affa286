package metrics

import (
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

var (
	hostUpDesc = prometheus.NewDesc("agentd_ollama_host_up",
		"1 while the Ollama host answers, 0 while its calls go to the other hosts.", []string{"host"}, nil)
	hostSlotsDesc = prometheus.NewDesc("agentd_ollama_host_slots",
		"Calls the Ollama host serves at once (its configured slots).", []string{"host"}, nil)
	hostBusyDesc = prometheus.NewDesc("agentd_ollama_host_busy",
		"Calls in flight on the Ollama host.", []string{"host"}, nil)
	hostModelsDesc = prometheus.NewDesc("agentd_ollama_host_models",
		"Models the Ollama host serves (configured, or listed by its /api/tags).", []string{"host"}, nil)
	hostFailingDesc = prometheus.NewDesc("agentd_ollama_host_failing_models",
		"Models the Ollama host, up, cannot run now (it answered HTTP 500): their calls go to other hosts for a backoff.", []string{"host"}, nil)
	hostCallsDesc = prometheus.NewDesc("agentd_ollama_host_calls_total",
		"Chat calls the Ollama host answered.", []string{"host"}, nil)
	queueLenDesc = prometheus.NewDesc("agentd_model_queue_length",
		"Model calls waiting in the daemon's queue for a free slot, by class (interactive, batch).", []string{"class"}, nil)
)

// PoolHost is one Ollama host of the model pool at scrape time.
type PoolHost struct {
	URL    string
	Up     bool
	Slots  int
	Busy   int
	Models int
	Served int64
	// Failing counts the models it cannot run now.
	Failing int
}

// PoolQueue is one class of the model queue at scrape time.
type PoolQueue struct {
	Class  string
	Queued int
}

// poolCollector reads the model pool at scrape time, so a gauge never drifts from it.
type poolCollector struct {
	f atomic.Pointer[func() ([]PoolHost, []PoolQueue)]
}

func (c *poolCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{hostUpDesc, hostSlotsDesc, hostBusyDesc, hostModelsDesc, hostFailingDesc, hostCallsDesc, queueLenDesc} {
		ch <- d
	}
}

func (c *poolCollector) Collect(ch chan<- prometheus.Metric) {
	f := c.f.Load()
	if f == nil {
		return
	}
	hosts, queue := (*f)()
	for _, h := range hosts {
		up := 0.0
		if h.Up {
			up = 1
		}
		ch <- prometheus.MustNewConstMetric(hostUpDesc, prometheus.GaugeValue, up, h.URL)
		ch <- prometheus.MustNewConstMetric(hostSlotsDesc, prometheus.GaugeValue, float64(h.Slots), h.URL)
		ch <- prometheus.MustNewConstMetric(hostBusyDesc, prometheus.GaugeValue, float64(h.Busy), h.URL)
		ch <- prometheus.MustNewConstMetric(hostModelsDesc, prometheus.GaugeValue, float64(h.Models), h.URL)
		ch <- prometheus.MustNewConstMetric(hostFailingDesc, prometheus.GaugeValue, float64(h.Failing), h.URL)
		ch <- prometheus.MustNewConstMetric(hostCallsDesc, prometheus.CounterValue, float64(h.Served), h.URL)
	}
	for _, q := range queue {
		ch <- prometheus.MustNewConstMetric(queueLenDesc, prometheus.GaugeValue, float64(q.Queued), q.Class)
	}
}

// SetPool sets the function a scrape reads the model pool's hosts and queue from; until
// it is set they are left out.
func (m *Metrics) SetPool(f func() ([]PoolHost, []PoolQueue)) {
	if m != nil {
		m.pool.f.Store(&f)
	}
}

// QueueWait records how long a model call of class (interactive, batch) waited in the
// daemon's queue before it got a slot.
func (m *Metrics) QueueWait(class string, d time.Duration) {
	if m != nil {
		m.queueWait.WithLabelValues(class).Observe(d.Seconds())
	}
}

func newQueueWait() *prometheus.HistogramVec {
	return prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "agentd_model_queue_wait_seconds",
		Help: "Time model calls waited in the daemon's queue for a free slot, by class (interactive, batch).",
		// From no wait at all to a long batch backlog behind a slow model.
		Buckets: []float64{.001, .01, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 300},
	}, []string{"class"})
}
