package llm

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/ollama/ollama/api"

	"github.com/agentd/agentd/daemon/ollamatest"
)

// TestPoolOneRequestsServerErrorKeepsOtherCalls (review21): Ollama answers 500 for
// errors of one request too (a runner that crashes on this prompt, "chat prompt error",
// a format it cannot apply), not only for a model it cannot load. A 500 is taken as
// "this model cannot run on this host", and the call goes on to every other host, so
// one agent's poison request takes the model off every host: every other agent's call
// for that model then fails at once with "no Ollama host can run model".
func TestPoolOneRequestsServerErrorKeepsOtherCalls(t *testing.T) {
	const model = ollamatest.TinyModelName
	a, b := ollamatest.NewFake(t), ollamatest.NewFake(t)
	poison := func(r *api.ChatRequest) (string, error) {
		for _, m := range r.Messages {
			if strings.Contains(m.Content, "POISON") {
				return "", api.StatusError{StatusCode: 500, ErrorMessage: "llama runner process has terminated: exit status 2"}
			}
		}
		return `{"ok":true}`, nil
	}
	a.OnChat(poison)
	b.OnChat(poison)
	c, err := NewPool(PoolOptions{Hosts: []HostConfig{{URL: a.URL(), Slots: 1}, {URL: b.URL(), Slots: 1}},
		HTTP: &http.Client{}, Backoff: Backoff{Base: 10 * time.Second, Max: 10 * time.Second}, Refresh: time.Hour})
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

// TestPoolTroubleDueSeesTheSoonestFuture (review21): troubleDue returns the soonest
// until of every entry, expired ones included (entries are only dropped when a call for
// the model succeeds on that host), so the prober's wake-up for a backoff that ends
// later is lost (probeLoop only takes it when it is after now) and calls waiting for
// that host wait for the next Refresh or another host's release.
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

// TestPoolModelMissingOnAConfiguredHost (review21): a 404 "model not found" drops the
// model from h.models, but a host with a configured list routes by h.fixed, so the
// host keeps getting the model's calls: each one costs a 404 round trip first.
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
