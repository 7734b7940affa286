package llm

import (
	"cmp"
	"context"
	"errors"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentd/agentd/internal/backoff"
	"github.com/agentd/agentd/internal/ollamatest"
	"github.com/agentd/agentd/internal/testutil"
	ollama "github.com/ollama/ollama/api"
)

// outOfMemory is how Ollama 0.17.4 (llm/server.go) refuses to load a model too big for
// the host's memory; /api/chat answers it with HTTP 500.
const outOfMemory = "model requires more system memory (5.2 GiB) than is available (1.9 GiB)"

func hostStatus(c *Client, f *ollamatest.Fake) HostStatus {
	for _, h := range c.PoolStatus().Hosts {
		if strings.HasSuffix(f.URL(), strings.TrimPrefix(strings.TrimPrefix(h.URL, "http://"), "https://")) {
			return h
		}
	}
	return HostStatus{}
}

// TestPoolTellsHostFailuresFromModelAndRequestFailures sends a call to host a, which
// fails in one of the ways a real Ollama fails, with host b healthy beside it.
func TestPoolTellsHostFailuresFromModelAndRequestFailures(t *testing.T) {
	const model = ollamatest.TinyModelName
	for _, tc := range []struct {
		name   string
		breakA func(a, b *ollamatest.Fake)
		// wantErr is nil when the call must succeed on b.
		wantErr func(error) bool
		wantUp  bool // a is still up afterwards
		wantOnB int  // calls b got
		wantOnA int  // calls a got (a dead host records none)
		thenOnA bool // a next call for the model goes to a again
		timeout time.Duration
	}{
		{name: "connection_closed_is_host_down", breakA: func(a, _ *ollamatest.Fake) { a.SetDown(true) },
			wantUp: false, wantOnA: 0, wantOnB: 1},
		{name: "no_answer_in_time_is_host_down", breakA: func(a, _ *ollamatest.Fake) { a.SetDelay(2 * time.Second) },
			timeout: 300 * time.Millisecond, wantUp: false, wantOnA: 1, wantOnB: 1},
		{name: "busy_503_is_host_down", breakA: func(a, _ *ollamatest.Fake) { a.SetBusy(true) },
			wantUp: false, wantOnA: 1, wantOnB: 1},
		{name: "model_cannot_load_500_keeps_host_up", breakA: func(a, _ *ollamatest.Fake) { a.SetLoadError(model, outOfMemory) },
			wantUp: true, wantOnA: 1, wantOnB: 1},
		{name: "model_gone_404_keeps_host_up", breakA: func(a, _ *ollamatest.Fake) { a.SetModels("other") },
			wantUp: true, wantOnA: 1, wantOnB: 1},
		{name: "bad_request_400_fails_the_call_once", breakA: func(a, b *ollamatest.Fake) {
			refuse := func(r *ollama.ChatRequest) (string, error) {
				if r.Model != model {
					return "ok", nil
				}
				return "", ollama.StatusError{StatusCode: 400, ErrorMessage: `"` + model + `" does not support chat`}
			}
			a.OnChat(refuse)
			b.OnChat(refuse)
		}, wantErr: func(err error) bool { var se *StatusError; return errors.As(err, &se) && se.Status == 400 },
			wantUp: true, wantOnA: 1, wantOnB: 0, thenOnA: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, b := ollamatest.NewFake(t), ollamatest.NewFake(t)
			a.SetModels(model, "other")
			c, err := NewPool(PoolOptions{Hosts: []HostConfig{{URL: a.URL(), Slots: 1}, {URL: b.URL(), Slots: 1}},
				// A long backoff: a busy or slow host answers /api/tags, and must not be
				// found up again before its status is read.
				HTTP: &http.Client{Timeout: cmp.Or(tc.timeout, time.Minute)}, Backoff: backoff.Policy{Base: time.Minute, Max: time.Minute}, Refresh: time.Hour})
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			waitListed(t, c)
			tc.breakA(a, b)
			err = chatOnce(context.Background(), c, model)
			switch {
			case tc.wantErr == nil && err != nil:
				t.Fatalf("call: %v, want it served by host b", err)
			case tc.wantErr != nil && !tc.wantErr(err):
				t.Fatalf("call: %v, not the error wanted", err)
			}
			if na, nb := len(a.Requests()), len(b.Requests()); na != tc.wantOnA || nb != tc.wantOnB {
				t.Errorf("host a got %d calls and b %d, want %d and %d", na, nb, tc.wantOnA, tc.wantOnB)
			}
			if up := hostStatus(c, a).Up; up != tc.wantUp {
				t.Errorf("host a up = %v, want %v (status %+v)", up, tc.wantUp, hostStatus(c, a))
			}
			if !tc.wantUp {
				return
			}
			// A host still up serves the models it can: "other" is only on a.
			na := len(a.Requests())
			if err := chatOnce(context.Background(), c, "other"); err != nil {
				t.Fatalf("a call for another model on host a: %v", err)
			}
			if len(a.Requests()) != na+1 {
				t.Error("the call for another model did not go to host a")
			}
			// The next call for the model goes to a only when a can run it.
			na = len(a.Requests())
			chatOnce(context.Background(), c, model)
			if got := len(a.Requests()) > na; got != tc.thenOnA {
				t.Errorf("next call for %s went to host a: %v, want %v", model, got, tc.thenOnA)
			}
		})
	}
}

// TestPoolModelTroubleOnTheOnlyHost checks a model that cannot load on the pool's only
// host: a call fails with the server's reason; one caller's failures (a request only it
// sends may be at fault) keep it off for nobody; once two callers' calls failed, the calls
// after them fail at once without reaching the server until the backoff is over (no retry
// storm), and the model is tried there again after it, while the host stays up and serves
// other models throughout.
func TestPoolModelTroubleOnTheOnlyHost(t *testing.T) {
	const model = ollamatest.TinyModelName
	a := ollamatest.NewFake(t)
	a.SetModels(model, "other")
	c, err := NewPool(PoolOptions{Hosts: []HostConfig{{URL: a.URL(), Slots: 2}},
		Backoff: backoff.Policy{Base: 300 * time.Millisecond, Max: time.Second}, Refresh: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	waitListed(t, c)
	a.SetLoadError(model, outOfMemory)
	ctx := context.Background()

	one, two := WithPriority(ctx, Interactive, "a-1"), WithPriority(ctx, Interactive, "a-2")
	for i := range 2 {
		err = chatOnce(one, c, model)
		if !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), outOfMemory) {
			t.Fatalf("call %d of one caller: %v, want ErrUnavailable with the server's reason", i+1, err)
		}
	}
	if n := len(a.Requests()); n != 2 {
		t.Fatalf("the server got %d calls from one caller, want both: one caller's failures keep the model off for nobody", n)
	}
	if err = chatOnce(two, c, model); !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), outOfMemory) {
		t.Fatalf("a second caller's call: %v, want ErrUnavailable with the server's reason", err)
	}
	sent := len(a.Requests())
	for range 5 {
		err = chatOnce(ctx, c, model)
	}
	if n := len(a.Requests()) - sent; n != 0 {
		t.Errorf("the server got %d more calls for a model it cannot load, within its backoff", n)
	}
	for _, want := range []string{"can run model", outOfMemory, "next try in"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("call within the backoff: %v, want it to say %q", err, want)
		}
	}
	if err := chatOnce(ctx, c, "other"); err != nil {
		t.Errorf("another model on the same host: %v", err)
	}
	if st := c.PoolStatus().Hosts[0]; !st.Up || len(st.Failing) != 1 || st.Failing[0].Model != modelKey(model) ||
		!strings.Contains(st.Failing[0].Error, outOfMemory) || st.Failing[0].RetryIn <= 0 {
		t.Errorf("status of the host: %+v; want it up, failing %s with the server's reason", st, model)
	}
	a.SetLoadError(model, "")
	testutil.Eventually(t, 5*time.Second, "the model tried on the host again after its backoff", func() bool {
		return chatOnce(ctx, c, model) == nil
	})
	if !slices.ContainsFunc(a.Requests()[sent:], func(r ollama.ChatRequest) bool { return r.Model == model }) {
		t.Error("no call for the model reached the host after the backoff")
	}
}
