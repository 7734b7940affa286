package agent

// What the step benchmarks record: every model call as the client saw it, and every
// command's run time as the supervisor reports it.

import (
	"bytes"
	"encoding/json"
	"io"
	"math"
	"net/http"
	"slices"
	"sync"
	"time"

	ollama "github.com/ollama/ollama/api"
)

// chatCall is one POST /api/chat as the client saw it. The bodies are kept raw and decoded
// after the measurement, so recording costs a copy, not a JSON decode, inside the step.
type chatCall struct {
	start, end time.Time
	reqBody    []byte
	respBody   bytes.Buffer
}

func (c *chatCall) dur() time.Duration { return c.end.Sub(c.start) }

// request decodes the request as sent.
func (c *chatCall) request() (ollama.ChatRequest, error) {
	var r ollama.ChatRequest
	err := json.Unmarshal(c.reqBody, &r)
	return r, err
}

// final decodes the reply's last (done) record, which carries the server's counters.
func (c *chatCall) final() ollama.ChatResponse {
	var last ollama.ChatResponse
	dec := json.NewDecoder(bytes.NewReader(c.respBody.Bytes()))
	for {
		var r ollama.ChatResponse
		if dec.Decode(&r) != nil {
			return last
		}
		if r.Done {
			last = r
		}
	}
}

// chatRecorder is an http.RoundTripper that times every /api/chat round trip, from sending
// the request to the end of the reply body, and keeps both bodies.
type chatRecorder struct {
	next http.RoundTripper
	mu   sync.Mutex
	log  []*chatCall
}

func newChatRecorder() *chatRecorder {
	return &chatRecorder{next: &http.Transport{MaxIdleConnsPerHost: 4}}
}

func (r *chatRecorder) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Method != http.MethodPost || req.URL.Path != "/api/chat" {
		return r.next.RoundTrip(req)
	}
	c := &chatCall{start: time.Now()}
	if req.GetBody != nil {
		if body, err := req.GetBody(); err == nil {
			c.reqBody, _ = io.ReadAll(body)
		}
	}
	r.mu.Lock()
	r.log = append(r.log, c)
	r.mu.Unlock()
	resp, err := r.next.RoundTrip(req)
	if err != nil {
		c.end = time.Now()
		return nil, err
	}
	resp.Body = &recordedBody{ReadCloser: resp.Body, c: c}
	return resp, nil
}

// calls returns the calls recorded from index from on.
func (r *chatRecorder) calls(from int) []*chatCall {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.log[min(from, len(r.log)):])
}

func (r *chatRecorder) len() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.log)
}

// recordedBody copies the reply body and stamps the call's end at EOF or Close.
type recordedBody struct {
	io.ReadCloser
	c    *chatCall
	once sync.Once
}

func (b *recordedBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.c.respBody.Write(p[:n])
	if err == io.EOF {
		b.stamp()
	}
	return n, err
}

func (b *recordedBody) Close() error {
	b.stamp()
	return b.ReadCloser.Close()
}

func (b *recordedBody) stamp() { b.once.Do(func() { b.c.end = time.Now() }) }

// pct returns the p-th percentile (0 < p ≤ 1, nearest rank) of ds.
func pct(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	i := int(math.Ceil(p*float64(len(s)))) - 1
	return s[max(0, min(i, len(s)-1))]
}

func mean(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	var sum time.Duration
	for _, d := range ds {
		sum += d
	}
	return sum / time.Duration(len(ds))
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// commandTimes records how long each command ran, in order (the Metrics the benchmark's
// supervisor reports to).
type commandTimes struct {
	noMetrics
	mu sync.Mutex
	ds []time.Duration
}

func (c *commandTimes) Command(_, _ string, d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.ds = append(c.ds, d)
}

func (c *commandTimes) durations() []time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.ds)
}
