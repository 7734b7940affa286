package llm

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/agentd/agentd/internal/backoff"
	"github.com/agentd/agentd/internal/ollamatest"
	ollama "github.com/ollama/ollama/api"
)

// Ollama answers 500 for errors of one request too (a runner that crashes on this prompt,
// "chat prompt error", a format it cannot apply), not only for a model it cannot load: a
// request that fails so on two hosts fails alone, and keeps the model off no host, so
// another agent's call for that model goes on being served.
func TestPoolOneRequestsServerErrorKeepsOtherCalls(t *testing.T) {
	const model = ollamatest.TinyModelName
	a, b := ollamatest.NewFake(t), ollamatest.NewFake(t)
	poison := func(r *ollama.ChatRequest) (string, error) {
		for _, m := range r.Messages {
			if strings.Contains(m.Content, "POISON") {
				return "", ollama.StatusError{StatusCode: 500, ErrorMessage: "llama runner process has terminated: exit status 2"}
			}
		}
		return `{"ok":true}`, nil
	}
	a.OnChat(poison)
	b.OnChat(poison)
	c, err := NewPool(PoolOptions{Hosts: []HostConfig{{URL: a.URL(), Slots: 1}, {URL: b.URL(), Slots: 1}},
		HTTP: &http.Client{}, Backoff: backoff.Policy{Base: 10 * time.Second, Max: 10 * time.Second}, Refresh: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	waitListed(t, c)
	ctx := context.Background()
	_, err = c.Chat(ctx, ChatRequest{Model: model, Messages: []Message{{Role: "user", Content: "POISON"}}})
	if err == nil {
		t.Fatal("the poison request succeeded")
	}
	// Another agent's ordinary request for the same model.
	if err := chatOnce(ctx, c, model); err != nil {
		t.Errorf("an ordinary call after one request's 500: %v\n(one request's error kept the model off every host)", err)
	}
}

// troubleDue is the soonest backoff still to end: an expired entry (entries are dropped
// only when a call for the model succeeds there) must not hide it, or the prober would
// not wake the calls waiting for that host when its backoff ends.
func TestPoolTroubleDueSeesTheSoonestFuture(t *testing.T) {
	now := time.Now()
	p := &Pool{hosts: []*poolHost{
		{troubled: map[string]*hostModel{"x:latest": {until: now.Add(-time.Hour)}}},
		{troubled: map[string]*hostModel{"y:latest": {until: now.Add(2 * time.Second)}}},
	}}
	if got := p.troubleDue(); !got.After(now) {
		t.Errorf("troubleDue = %v ago, want the backoff that ends in 2s", now.Sub(got).Round(time.Second))
	}
}

// A 404 "model not found" drops the model from a host with a configured model list too:
// its calls go elsewhere until the host's /api/tags lists it, not each through a 404.
func TestPoolModelMissingOnAConfiguredHost(t *testing.T) {
	const model = ollamatest.TinyModelName
	a, b := ollamatest.NewFake(t), ollamatest.NewFake(t)
	a.SetModels("other") // a lacks the model, though its config says it has it
	c, err := NewPool(PoolOptions{Hosts: []HostConfig{{URL: a.URL(), Slots: 4, Models: []string{model}}, {URL: b.URL(), Slots: 1}},
		HTTP: &http.Client{}, Backoff: testBackoff, Refresh: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	waitListed(t, c)
	ctx := context.Background()
	for range 3 {
		if err := chatOnce(ctx, c, model); err != nil {
			t.Fatal(err)
		}
	}
	if n := len(a.Requests()); n > 1 {
		t.Errorf("host a answered 404 for %s %d times: after the first it should not get the model's calls", model, n)
	}
}

// A model that cannot load is kept off its host once two callers' calls failed there in a
// row, even with the supervisor's probe between them (/api/show, every minute): the probe
// reads the manifest only, so its success forgets neither the first caller's failure nor a
// past backoff's count.
func TestPoolProbeSuccessDoesNotClearAModelsServerErrors(t *testing.T) {
	const model = ollamatest.TinyModelName
	a := ollamatest.NewFake(t)
	a.SetModels(model)
	c, err := NewPool(PoolOptions{Hosts: []HostConfig{{URL: a.URL(), Slots: 2}},
		HTTP: &http.Client{}, Backoff: backoff.Policy{Base: 10 * time.Second, Max: 10 * time.Second}, Refresh: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	waitListed(t, c)
	a.SetLoadError(model, outOfMemory)
	ctx := context.Background()
	if err := chatOnce(WithPriority(ctx, Interactive, "a-1"), c, model); err == nil {
		t.Fatal("a call for a model that cannot load succeeded")
	}
	if _, err := c.Probe(ctx, model); err != nil {
		t.Fatalf("probe: %v", err)
	}
	if err := chatOnce(WithPriority(ctx, Interactive, "a-2"), c, model); err == nil {
		t.Fatal("a call for a model that cannot load succeeded")
	}
	sent := len(a.Requests())
	_ = chatOnce(WithPriority(ctx, Interactive, "a-3"), c, model)
	if n := len(a.Requests()) - sent; n != 0 {
		t.Errorf("two callers failed in a row (a probe between them), yet a third caller's call reached the host: the probe's success forgot the first failure")
	}
}

// A 404 that comes before the host's first /api/tags is remembered until that listing:
// the model's next calls go elsewhere, not each through another 404.
func TestPoolModelMissingBeforeTheFirstListing(t *testing.T) {
	const model = "agentd-tiny:latest"
	h := &poolHost{up: true, fixed: map[string]bool{model: true}}
	p := &Pool{hosts: []*poolHost{h}}
	if !h.knows(model) {
		t.Fatal("before its first listing a host is assumed to have its configured models")
	}
	p.failed(context.Background(), h, model, &ModelNotFoundError{Model: model, Err: errors.New("model not found")})
	if h.knows(model) {
		t.Error("after a 404 before the first listing the host still counts as having the model")
	}
}
