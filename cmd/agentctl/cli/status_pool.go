package cli

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/agentd/agentd/api"
	"github.com/agentd/agentd/internal/display"
)

// writePool renders the model pool: each host when there is more than one (a single
// host is the ollama line already) and the queue of model calls.
func writePool(w io.Writer, o api.OllamaStatus) {
	if len(o.Hosts) > 1 {
		for i, h := range o.Hosts {
			label := ""
			if i == 0 {
				label = "hosts:"
			}
			fmt.Fprintf(w, "%s\t%s\n", label, hostLine(h))
		}
	} else if len(o.Hosts) == 1 {
		if o.Hosts[0].Slots > 1 {
			fmt.Fprintf(w, "slots:\t%d of %d busy\n", o.Hosts[0].Busy, o.Hosts[0].Slots)
		}
		for _, f := range o.Hosts[0].Failing {
			fmt.Fprintf(w, "failing:\t%s\n", failingLine(f))
		}
	}
	if len(o.Queue) > 0 {
		parts := make([]string, len(o.Queue))
		for i, q := range o.Queue {
			parts[i] = queueLine(q)
		}
		fmt.Fprintf(w, "queue:\t%s\n", strings.Join(parts, "; "))
	}
}

// hostLine renders one host: "http://a:11434 up, 1 of 4 slots busy, 12 calls (checked
// just now); models: m1, m2" or "http://b:11434 down, next try in 2s: connection refused
// (checked 5s ago)".
func hostLine(h api.OllamaHostStatus) string {
	if !h.Up {
		s := h.URL + " down"
		if h.RetryInMS > 0 {
			s += ", next try in " + (time.Duration(h.RetryInMS) * time.Millisecond).Round(time.Second).String()
		}
		if h.Error != "" {
			s += ": " + h.Error
		}
		return s + checkedAgo(h.CheckedAt, time.Now())
	}
	s := fmt.Sprintf("%s up, %d of %d slots busy, %s%s", h.URL, h.Busy, h.Slots, display.Count(h.Served, "call", "calls"), checkedAgo(h.CheckedAt, time.Now()))
	switch {
	case len(h.Models) > 0 && h.ModelsConfigured:
		s += "; models (configured): " + strings.Join(h.Models, ", ")
	case len(h.Models) > 0:
		s += "; models: " + strings.Join(h.Models, ", ")
	}
	for _, f := range h.Failing {
		s += "; " + failingLine(f)
	}
	return s
}

// failingLine renders a model the host cannot run now: "cannot run qwen3:8b, next try in
// 2s: ollama at …: HTTP 500 …".
func failingLine(f api.OllamaModelFailing) string {
	return fmt.Sprintf("cannot run %s, next try in %s: %s", f.Model, (time.Duration(f.RetryInMS) * time.Millisecond).Round(time.Second), f.Error)
}

// queueLine renders one class: "interactive 0 waiting, p99 wait 12ms over 40 calls".
func queueLine(q api.ModelQueueStatus) string {
	s := fmt.Sprintf("%s %d waiting", q.Class, q.Queued)
	if q.Served > 0 {
		s += fmt.Sprintf(", wait p50 %s p99 %s", msDuration(q.WaitP50MS), msDuration(q.WaitP99MS))
	}
	return s
}

// msDuration shows milliseconds as a short duration: 0s, 12ms, 1.2s.
func msDuration(ms float64) string {
	d := time.Duration(ms * float64(time.Millisecond))
	switch {
	case d < time.Millisecond:
		return "0s"
	case d < time.Second:
		return d.Round(time.Millisecond).String()
	}
	return d.Round(100 * time.Millisecond).String()
}
