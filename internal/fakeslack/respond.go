package fakeslack

import (
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"time"
)

// Option configures a Fake.
type Option func(*Fake)

// WithAckDeadline sets how long an envelope may wait for its ack (Slack's is 3 s); tests
// of redelivery make it short.
func WithAckDeadline(d time.Duration) Option { return func(f *Fake) { f.AckDeadline = d } }

// Response is one answer posted to a slash command's response_url.
type Response struct {
	URL          string
	Channel      string
	ResponseType string // "ephemeral" (the default) or "in_channel"
	Text         string
	Blocks       json.RawMessage
	// UnfurlLinks and UnfurlMedia are what previews Slack would show: true unless the
	// answer said false.
	UnfurlLinks, UnfurlMedia bool
	At                       time.Time
}

// responseURL is a slash command's response_url: five answers within 30 minutes.
type responseURL struct {
	channel string
	created time.Time
	used    int
}

const (
	responseUses = 5
	responseTTL  = 30 * time.Minute
)

// RateLimitNext makes the next call of method answer 429 with Retry-After: seconds, as
// Slack does when a method's rate limit tier is exceeded.
func (f *Fake) RateLimitNext(method string, seconds int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.limited[method] = append(f.limited[method], seconds)
}

// rateLimited answers 429 if method was chosen by RateLimitNext. Caller holds f.mu.
func (f *Fake) rateLimited(w http.ResponseWriter, method string) bool {
	q := f.limited[method]
	if len(q) == 0 {
		return false
	}
	f.limited[method] = q[1:]
	w.Header().Set("Retry-After", strconv.Itoa(q[0]))
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusTooManyRequests)
	json.NewEncoder(w).Encode(obj{"ok": false, "error": "ratelimited"})
	return true
}

// respond takes an answer to a slash command's response_url.
func (f *Fake) respond(w http.ResponseWriter, r *http.Request) {
	url := f.srv.URL + r.URL.Path
	body, _ := io.ReadAll(r.Body)
	var msg struct {
		Text         string          `json:"text"`
		ResponseType string          `json:"response_type"`
		Blocks       json.RawMessage `json:"blocks"`
		UnfurlLinks  *bool           `json:"unfurl_links"`
		UnfurlMedia  *bool           `json:"unfurl_media"`
	}
	if err := json.Unmarshal(body, &msg); err != nil {
		http.Error(w, "invalid_payload", http.StatusBadRequest)
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	ru, ok := f.respURLs[url]
	switch {
	case !ok:
		http.Error(w, "no_such_url", http.StatusNotFound)
		return
	case ru.used >= responseUses || time.Since(ru.created) > responseTTL:
		http.Error(w, "expired_url", http.StatusNotFound)
		return
	}
	if e, problems := checkMessage(msg.Text, msg.Blocks); e != "" {
		w.WriteHeader(http.StatusBadRequest)
		writeJSON(w, obj{"ok": false, "error": e, "response_metadata": obj{"messages": problems}})
		return
	}
	ru.used++
	if msg.ResponseType == "" {
		msg.ResponseType = "ephemeral"
	}
	f.responses = append(f.responses, Response{URL: url, Channel: ru.channel, ResponseType: msg.ResponseType, Text: msg.Text,
		Blocks: msg.Blocks, UnfurlLinks: msg.UnfurlLinks == nil || *msg.UnfurlLinks, UnfurlMedia: msg.UnfurlMedia == nil || *msg.UnfurlMedia, At: time.Now()})
	f.changedLocked()
	io.WriteString(w, "ok")
}

// Responses returns the answers posted to the response_url of the slash command sent
// as envelope (or a redelivery of it).
func (v View) Responses(envelope string) []Response {
	e := v.f.envelopes[envelope]
	if e == nil {
		return nil
	}
	url, _ := e.payload.(obj)["response_url"].(string)
	return matching(v.f.responses, func(r Response) bool { return r.URL == url })
}

// AllResponses returns every answer posted to any response_url.
func (v View) AllResponses() []Response { return append([]Response(nil), v.f.responses...) }

// Delivery is what the fake knows of one envelope.
type Delivery struct {
	ID, Type string
	// Attempt is the envelope's retry_attempt, Reason its retry_reason.
	Attempt int
	Reason  string
	// Sent is when it was first written to a connection, Acked when its ack came (zero
	// until then).
	Sent, Acked time.Time
	// InTime is true when the ack came within the deadline; TimedOut when the deadline
	// passed first (an events_api envelope is then redelivered as RetriedBy; a slash
	// command or click failed for the person with "operation_timeout").
	InTime, TimedOut bool
	RetriedBy        string
}

// Delivery returns what the fake knows of envelope.
func (v View) Delivery(envelope string) (Delivery, bool) {
	e := v.f.envelopes[envelope]
	if e == nil {
		return Delivery{}, false
	}
	return Delivery{ID: e.id, Type: e.typ, Attempt: e.attempt, Reason: e.reason, Sent: e.sent, Acked: e.acked,
		InTime: !e.acked.IsZero() && e.acked.Sub(e.sent) <= v.f.AckDeadline, TimedOut: e.timedOut, RetriedBy: e.retriedBy}, true
}

// Deliveries returns every envelope sent so far, in order.
func (v View) Deliveries() []Delivery {
	var out []Delivery
	for _, id := range v.f.envOrder {
		d, _ := v.Delivery(id)
		out = append(out, d)
	}
	return out
}

// AckedInTime reports whether envelope was acked within the ack deadline.
func (v View) AckedInTime(envelope string) bool {
	d, ok := v.Delivery(envelope)
	return ok && d.InTime
}
