package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	ollama "github.com/ollama/ollama/api"

	"github.com/agentd/agentd/api"
	"github.com/agentd/agentd/commands"
	"github.com/agentd/agentd/daemon/llm"
	"github.com/agentd/agentd/daemon/store"
	"github.com/agentd/agentd/internal/ollamatest"
	"github.com/agentd/agentd/internal/testutil"
)

// BenchmarkStepVsBareChat compares, on the real Ollama server with the tiny model, one
// agentd step — from CreateAgent kicking the first think to the persisted proposal's event,
// retries included — with one bare ollama.Client.Chat carrying the messages, format and
// options the daemon builds for that step. The two alternate (a b, b a, …) so that drift and
// Ollama's prompt cache treat them alike; one op is one pair.
//
// same_prompt: every call has the same prompt, so after the first each one finds its whole
// prompt in the server's KV cache (one slot) and pays only for the reply.
// fresh_prompt: each call gets its own agent name, the first line of the system message, so
// nothing past "You are " is cached and every call evaluates the whole prompt, as a real
// step evaluates its new progress text.
//
// Metrics: ms/agentd and ms/bare (means, -p50 medians), ratio (of means) and ratio-p50,
// ratio-adj (1 + the daemon's extra time outside the server's total_duration, over the bare
// mean: the overhead without the reply-length lottery and without retries), calls/step
// (model calls per persisted proposal, retries and strikes included), retry-% (steps that
// needed more than one call), bare-invalid-% (bare replies the daemon would have rejected),
// eval tokens per call on each side, to show how much the random replies vary, and the
// server's prompt_eval_duration of each side's first call, to show what the cache saved.
func BenchmarkStepVsBareChat(b *testing.B) {
	if _, err := ollamatest.Binary(); err != nil {
		b.Skipf("no Ollama binary: %v", err)
	}
	srv := ollamatest.StartReal(b)
	for _, fresh := range []bool{false, true} {
		name := map[bool]string{false: "same_prompt", true: "fresh_prompt"}[fresh]
		b.Run(name, func(b *testing.B) { benchStepVsBare(b, srv, fresh) })
	}
}

// pairResult is one side of one pair.
type pairResult struct {
	wall   time.Duration
	server time.Duration // Σ total_duration the server reported for the calls
	calls  int
	eval   int // Σ eval_count
	prompt int // prompt_eval_count of the first call
	// promptEval is the first call's prompt_eval_duration: short when the prompt was cached.
	promptEval time.Duration
	valid      bool
}

// stepVsBare holds one sub-benchmark's supervisor and bare api.
type stepVsBare struct {
	b      *testing.B
	ctx    context.Context
	sup    *Supervisor
	rec    *chatRecorder // the daemon's calls
	events <-chan api.Event
	bare   *ollama.Client
	in     PromptInput // the first step's input; Name varies
	format json.RawMessage
}

func benchStepVsBare(b *testing.B, srv *ollamatest.Real, fresh bool) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	x := &stepVsBare{b: b, ctx: ctx, rec: newChatRecorder(), in: firstStepInput(b, "")}
	c, err := llm.New(srv.URL(), &http.Client{Transport: x.rec})
	if err != nil {
		b.Fatal(err)
	}
	dir := b.TempDir()
	st, err := store.Open(ctx, filepath.Join(dir, "agentd.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	x.sup, err = New(testOptions(func(o *Options) {
		o.Store, o.LLM, o.Model, o.StateDir = st, c, ollamatest.TinyModelName, dir
		withDefaultDirectives(o)
		o.Commands = commands.DefaultNames
		// The tiny model's noise must not pause the agent: a step lasts until a proposal.
		o.MaxInvalidReplies = 1 << 20
		o.Now = func() time.Time { return firstStepNow }
	}))
	if err != nil {
		b.Fatal(err)
	}
	if err := x.sup.Start(ctx); err != nil {
		b.Fatal(err)
	}
	defer func() { cancel(); x.sup.Wait() }()
	events, unsub := x.sup.events.Subscribe("", 0)
	defer unsub()
	x.events = events
	if !testutil.Wait(30*time.Second, func() bool { return x.sup.model.info() != nil }) {
		b.Fatal("the supervisor never probed the model")
	}
	// The bare client goes through the same recording transport, so both sides pay for it.
	u, _ := url.Parse(srv.URL())
	x.bare = ollama.NewClient(u, &http.Client{Transport: newChatRecorder()})
	if x.format, err = json.Marshal(commands.ReplySchema(x.in.Commands)); err != nil {
		b.Fatal(err)
	}

	// Warm up (load the runner, calibrate chars per token), then check that the bare
	// request is the daemon's.
	x.step("warm-up")
	x.step("warm-up")
	name := func(side string, i int) string {
		if !fresh {
			return "bench"
		}
		return fmt.Sprintf("bench-%s-%05d", side, i)
	}
	x.checkRequest(name("a", 0))

	var as, bs []pairResult
	i := 0
	for b.Loop() {
		i++
		if i%2 == 1 {
			as = append(as, x.step(name("a", i)))
			bs = append(bs, x.bareCall(name("b", i)))
		} else {
			bs = append(bs, x.bareCall(name("b", i)))
			as = append(as, x.step(name("a", i)))
		}
	}
	b.StopTimer()
	reportPairs(b, as, bs)
}

// step creates an agent called name, which kicks its first think, and waits for the
// proposal's event; then it deletes the agent, so the name can come back.
func (x *stepVsBare) step(name string) pairResult {
	from := x.rec.len()
	start := time.Now()
	a, err := x.sup.runs.CreateAgent(x.ctx, api.CreateAgentRequest{Name: name, Description: x.in.Description, Goals: x.in.Goals})
	if err != nil {
		x.b.Fatal(err)
	}
	timeout := time.After(5 * time.Minute)
	for done := false; !done; {
		select {
		case ev, ok := <-x.events:
			if !ok {
				x.b.Fatal("subscription dropped")
			}
			done = ev.AgentID == a.ID && ev.Type == api.EventProposal
		case <-timeout:
			x.b.Fatalf("no proposal from %s in 5 minutes", name)
		}
	}
	r := pairResult{wall: time.Since(start), valid: true}
	calls := x.rec.calls(from)
	for i, call := range calls {
		fin := call.final()
		r.server += fin.TotalDuration
		r.eval += fin.EvalCount
		if i == 0 {
			r.prompt, r.promptEval = fin.PromptEvalCount, fin.PromptEvalDuration
		}
	}
	r.calls = len(calls)
	if err := x.sup.runs.DeleteAgent(x.ctx, a.ID); err != nil {
		x.b.Fatal(err)
	}
	return r
}

// request builds the step's request for an agent called name the way think.go does.
func (x *stepVsBare) request(name string) *ollama.ChatRequest {
	in := x.in
	in.Name = name
	msgs := BuildPrompt(in)
	numCtx := x.sup.live().MaxContext
	if info := x.sup.model.info(); info != nil && info.ContextLength > 0 && info.ContextLength < numCtx {
		numCtx = info.ContextLength
	}
	numPredict := max(512, numCtx-int(float64(PromptChars(msgs))/x.sup.model.charsPerToken(ollamatest.TinyModelName))-64)
	req := &ollama.ChatRequest{
		Model: ollamatest.TinyModelName, Stream: new(bool), Format: x.format,
		Options: map[string]any{"num_ctx": numCtx, "num_predict": numPredict},
	}
	for _, m := range msgs {
		req.Messages = append(req.Messages, ollama.Message{Role: m.Role, Content: m.Content})
	}
	return req
}

// checkRequest runs one step and checks that request builds what the daemon sent.
func (x *stepVsBare) checkRequest(name string) {
	from := x.rec.len()
	x.step(name)
	sent, err := x.rec.calls(from)[0].request()
	if err != nil {
		x.b.Fatal(err)
	}
	want := x.request(name)
	if !sameRequest(sent, *want) {
		x.b.Fatalf("the bare request differs from the daemon's:\ndaemon: %s\nbare:   %s", mustJSON(sent), mustJSON(want))
	}
	x.b.Logf("request: %d messages, %d prompt characters, format %d bytes, options %s",
		len(want.Messages), promptChars(want.Messages), len(want.Format), mustJSON(want.Options))
}

// bareCall sends the step's request once with ollama.Client.Chat, and checks the reply the
// way the daemon would (parse, else repair and parse) without asking again.
func (x *stepVsBare) bareCall(name string) pairResult {
	req := x.request(name)
	var resp ollama.ChatResponse
	start := time.Now()
	err := x.bare.Chat(x.ctx, req, func(r ollama.ChatResponse) error { resp = r; return nil })
	wall := time.Since(start)
	if err != nil {
		x.b.Fatal(err)
	}
	_, perr := commands.ParseReply(x.in.Commands, []byte(resp.Message.Content))
	if perr != nil {
		if fixed, ok := llm.Repair(resp.Message.Content); ok {
			_, perr = commands.ParseReply(x.in.Commands, []byte(fixed))
		}
	}
	return pairResult{wall: wall, server: resp.TotalDuration, calls: 1, eval: resp.EvalCount,
		prompt: resp.PromptEvalCount, promptEval: resp.PromptEvalDuration, valid: perr == nil}
}

func reportPairs(b *testing.B, as, bs []pairResult) {
	walls := func(rs []pairResult) (w []time.Duration) {
		for _, r := range rs {
			w = append(w, r.wall)
		}
		return w
	}
	var aOver, bOver, aPrompt, bPrompt time.Duration
	calls, retried, invalid, aEval, bEval, aCalls := 0, 0, 0, 0, 0, 0
	for _, r := range as {
		aOver += r.wall - r.server
		calls += r.calls
		if r.calls > 1 {
			retried++
		}
		aEval += r.eval
		aCalls += r.calls
		aPrompt += r.promptEval
	}
	for _, r := range bs {
		bOver += r.wall - r.server
		if !r.valid {
			invalid++
		}
		bEval += r.eval
		bPrompt += r.promptEval
	}
	n := float64(len(as))
	aMean, bMean := mean(walls(as)), mean(walls(bs))
	aP50, bP50 := pct(walls(as), .5), pct(walls(bs), .5)
	extra := (aOver - bOver) / time.Duration(len(as))
	b.ReportMetric(ms(aMean), "ms/agentd")
	b.ReportMetric(ms(bMean), "ms/bare")
	b.ReportMetric(ms(aP50), "ms/agentd-p50")
	b.ReportMetric(ms(bP50), "ms/bare-p50")
	b.ReportMetric(float64(aMean)/float64(bMean), "ratio")
	b.ReportMetric(float64(aP50)/float64(bP50), "ratio-p50")
	b.ReportMetric(1+float64(extra)/float64(bMean), "ratio-adj")
	b.ReportMetric(ms(extra), "ms/extra")
	b.ReportMetric(float64(calls)/n, "calls/step")
	b.ReportMetric(100*float64(retried)/n, "retry-%")
	b.ReportMetric(100*float64(invalid)/n, "bare-invalid-%")
	b.ReportMetric(float64(aEval)/float64(aCalls), "eval-tok/agentd-call")
	b.ReportMetric(float64(bEval)/n, "eval-tok/bare-call")
	b.ReportMetric(ms(aPrompt)/n, "ms/agentd-prompt-eval")
	b.ReportMetric(ms(bPrompt)/n, "ms/bare-prompt-eval")
	b.Logf("%d pairs; prompt_eval_count first call: agentd %d, bare %d; mean outside-server time per step: agentd %v, bare %v",
		len(as), as[len(as)-1].prompt, bs[len(bs)-1].prompt, aOver/time.Duration(len(as)), bOver/time.Duration(len(bs)))
}

// sameRequest compares what reaches the model: messages, format and num_ctx. num_predict
// follows the chars-per-token calibration, which the step just made may have moved; it
// only caps a reply that the schema ends long before.
func sameRequest(x, y ollama.ChatRequest) bool {
	var fx, fy bytes.Buffer
	json.Compact(&fx, x.Format)
	json.Compact(&fy, y.Format)
	return mustJSON(x.Messages) == mustJSON(y.Messages) && fx.String() == fy.String() &&
		mustJSON(x.Options["num_ctx"]) == mustJSON(y.Options["num_ctx"]) && x.Model == y.Model
}

func promptChars(msgs []ollama.Message) int {
	n := 0
	for _, m := range msgs {
		n += len(m.Content)
	}
	return n
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// What the step benchmarks record: every model call as the client saw it, and every
// command's run time as the supervisor reports it.

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
