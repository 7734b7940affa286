// Package llm is the daemon's only door to the model server: it talks to Ollama through
// github.com/ollama/ollama/api, probes the model (server version, context length,
// capabilities), sends schema-constrained /api/chat calls and turns what comes back into
// either a parsed proposal or a typed error the agent loop can act on.
//
// The agent loop calls Propose once per step; Generate serves other structured calls such as
// the agent profile. Both send the reply's JSON Schema as `format`, repair replies from
// servers or models that ignore it (Repair) and feed validation problems back once.
// Every request to a model carries that model's one Load (num_ctx, keep_alive), chosen
// once from its probe and the config (load.go), so the server never reloads a model
// because two callers asked for different context sizes.
//
// Errors are typed so callers never match on text: errors.Is(err, ErrUnavailable) means the
// server is down or busy and the call should be retried with NextBackoff;
// *ModelNotFoundError means the model must be pulled; *InvalidReplyError means the model
// answered twice with something that does not match the schema; a cancelled context comes
// back as the context's error, never as ErrUnavailable.
//
// NewPool makes a Client over several Ollama servers (pool.go): calls wait their turn in
// a fair queue (queue.go, people's agents first, by the class WithPriority puts in the
// context) and go to a server that is up and has the model; callers do not change.
package llm

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/agentd/agentd/api"
	ollama "github.com/ollama/ollama/api"
)

// Client talks to one Ollama server, or to a pool of them when NewPool made it. It is
// safe for concurrent use.
type Client struct {
	pool    *Pool // set by NewPool: calls are routed over its hosts (pool.go)
	host    string
	api     *ollama.Client
	hc      *http.Client
	observe func(Call)
	loads   loads // each model's load-affecting options, chosen once (load.go)
}

// Call is one finished /api/chat call, as an observer sees it.
type Call struct {
	Model                    string
	Duration                 time.Duration
	PromptTokens, EvalTokens int
	Err                      error // nil for a complete reply
}

// Observe makes f see every chat call once it has finished (metrics). Call it before
// the client is used; f must be quick and safe for concurrent use.
func (c *Client) Observe(f func(Call)) {
	c.observe = f
	if c.pool != nil {
		for _, h := range c.pool.hosts {
			h.c.observe = f
		}
	}
}

// New returns a client for host, which is read the way Ollama reads OLLAMA_HOST:
// "127.0.0.1:11434", "http://gpu-box:11434", "https://ollama.example/prefix", ":11434" or
// "" (config.DefaultOllamaHost), as api.ParseOllamaHost reads it. A host without a port gets 11434, or 80/443 when it names its scheme.
// hc may be nil; it should have no overall Timeout, because a non-streamed reply only
// starts arriving when generation is done: bound calls with their context instead.
func New(host string, hc *http.Client) (*Client, error) {
	base, err := api.ParseOllamaHost(host)
	if err != nil {
		return nil, err
	}
	if hc == nil {
		hc = &http.Client{}
	}
	return &Client{host: base.String(), api: ollama.NewClient(base, hc), hc: hc}, nil
}

// Host returns the normalized base URL of the server, e.g. "http://127.0.0.1:11434"; for a
// pool, its hosts' URLs joined by ", ".
func (c *Client) Host() string {
	if c.pool != nil {
		return c.pool.hostList()
	}
	return c.host
}

// Message is one chat message.
type Message struct {
	Role    string `json:"role"` // system, user or assistant
	Content string `json:"content"`
}

// ChatRequest is one non-streamed /api/chat call.
type ChatRequest struct {
	Model    string
	Messages []Message
	// Format is a JSON Schema the reply must follow (grammar-constrained decoding); empty for free text.
	Format json.RawMessage
	// NumCtx is the context window in tokens; 0 leaves the server's default, which is
	// usually far below what the model was trained for. Once SetLimits was called the
	// client replaces it (and KeepAlive) with the model's Load: budget to LoadFor's NumCtx.
	NumCtx int
	// Temperature overrides the model's default when set.
	Temperature *float64
	// NumPredict caps the reply in tokens; 0 means no cap.
	NumPredict int
	// KeepAlive is how long the server keeps the model loaded after the call; nil for its default.
	KeepAlive *time.Duration
}

// ChatResult is the complete reply to a ChatRequest.
type ChatResult struct {
	Content      string
	PromptTokens int           // prompt_eval_count: tokens of the prompt the server evaluated
	EvalTokens   int           // eval_count: tokens generated
	Duration     time.Duration // wall-clock time of the call, as the daemon saw it
	DoneReason   string        // "stop", or "length" when NumPredict cut the reply off
}

// Chat sends req with stream=false and returns the whole reply. A pool's client queues
// the call by its context's priority (WithPriority) and sends it to a host that can serve it.
func (c *Client) Chat(ctx context.Context, req ChatRequest) (*ChatResult, error) {
	if len(req.Format) > 0 && !json.Valid(req.Format) {
		return nil, fmt.Errorf("llm: chat: format is not valid JSON")
	}
	if ld, managed, err := c.requestLoad(ctx, req.Model); err != nil {
		return nil, err
	} else if managed {
		req.NumCtx, req.KeepAlive = ld.NumCtx, ld.KeepAlive
	}
	if c.pool != nil { // the request as chosen here, sent by one host's client
		return c.pool.chat(ctx, req)
	}
	start := time.Now()
	areq := &ollama.ChatRequest{
		Model:    req.Model,
		Messages: make([]ollama.Message, len(req.Messages)),
		Stream:   new(bool),
		Format:   req.Format,
		Options:  map[string]any{},
	}
	for i, m := range req.Messages {
		areq.Messages[i] = ollama.Message{Role: m.Role, Content: m.Content}
	}
	if req.NumCtx > 0 {
		areq.Options["num_ctx"] = req.NumCtx
	}
	if req.NumPredict > 0 {
		areq.Options["num_predict"] = req.NumPredict
	}
	if req.Temperature != nil {
		areq.Options["temperature"] = *req.Temperature
	}
	if req.KeepAlive != nil {
		areq.KeepAlive = &ollama.Duration{Duration: *req.KeepAlive}
	}
	r, err := c.postChat(ctx, areq)
	if err == nil && !r.Done {
		// A reply without its final "done" record is not a reply.
		err = errIncomplete
	}
	if err != nil {
		err = c.classify(ctx, "chat", req.Model, err)
		if c.observe != nil && ctx.Err() == nil { // a cancelled call says nothing about the model
			c.observe(Call{Model: req.Model, Duration: time.Since(start), Err: err})
		}
		return nil, err
	}
	// Counts from the server are untrusted: a negative one would lower an agent's tokens
	// under its budget.
	res := ChatResult{Content: r.Message.Content, PromptTokens: max(0, r.PromptEvalCount), EvalTokens: max(0, r.EvalCount),
		DoneReason: r.DoneReason, Duration: time.Since(start)}
	if c.observe != nil {
		c.observe(Call{Model: req.Model, Duration: res.Duration, PromptTokens: res.PromptTokens, EvalTokens: res.EvalTokens})
	}
	return &res, nil
}

// postChat sends one non-streamed /api/chat request. It does what ollama.Client.Chat does
// for stream=false, without the 8 MiB line buffer that client allocates for every call,
// and returns the same error types (ollama.StatusError) so classify treats both alike.
func (c *Client) postChat(ctx context.Context, areq *ollama.ChatRequest) (*ollama.ChatResponse, error) {
	body, err := json.Marshal(areq)
	if err != nil {
		return nil, err
	}
	hreq, err := http.NewRequestWithContext(ctx, http.MethodPost, c.host+"/api/chat", bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	hreq.Header.Set("Content-Type", "application/json")
	hreq.Header.Set("Accept", "application/json")
	resp, err := c.hc.Do(hreq)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode >= http.StatusBadRequest {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
		var e struct {
			Error string `json:"error"`
		}
		msg := strings.TrimSpace(string(b))
		if json.Unmarshal(b, &e) == nil && e.Error != "" {
			msg = e.Error
		}
		return nil, ollama.StatusError{StatusCode: resp.StatusCode, Status: resp.Status, ErrorMessage: msg}
	}
	var r struct {
		ollama.ChatResponse
		Error string `json:"error"`
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return nil, err
	}
	if len(bytes.TrimSpace(b)) == 0 {
		return nil, errors.New("") // described as "empty reply"
	}
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, errors.New(string(b)) // not Ollama: show what came, cut short
	}
	if r.Error != "" { // an error record inside a 200
		return nil, ollama.StatusError{StatusCode: http.StatusInternalServerError, ErrorMessage: r.Error}
	}
	return &r.ChatResponse, nil
}
