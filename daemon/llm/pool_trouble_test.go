package llm

import (
	"cmp"
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	ollama "github.com/ollama/ollama/api"

	"github.com/agentd/agentd/internal/backoff"
	"github.com/agentd/agentd/internal/ollamatest"
	"github.com/agentd/agentd/internal/testutil"
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
	c := openPool(t, PoolOptions{Hosts: []HostConfig{{URL: a.URL(), Slots: 1}, {URL: b.URL(), Slots: 1}},
		HTTP: &http.Client{}, Backoff: backoff.Policy{Base: 10 * time.Second, Max: 10 * time.Second}, Refresh: time.Hour})
	waitListed(t, c)
	ctx := context.Background()
	_, err := c.Chat(ctx, ChatRequest{Model: model, Messages: []Message{{Role: "user", Content: "POISON"}}})
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
	c := openPool(t, PoolOptions{Hosts: []HostConfig{{URL: a.URL(), Slots: 4, Models: []string{model}}, {URL: b.URL(), Slots: 1}},
		HTTP: &http.Client{}, Backoff: testBackoff, Refresh: time.Hour})
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
	c := openPool(t, PoolOptions{Hosts: []HostConfig{{URL: a.URL(), Slots: 2}},
		HTTP: &http.Client{}, Backoff: backoff.Policy{Base: 10 * time.Second, Max: 10 * time.Second}, Refresh: time.Hour})
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
			c := openPool(t, PoolOptions{Hosts: []HostConfig{{URL: a.URL(), Slots: 1}, {URL: b.URL(), Slots: 1}},
				// A long backoff: a busy or slow host answers /api/tags, and must not be
				// found up again before its status is read.
				HTTP: &http.Client{Timeout: cmp.Or(tc.timeout, time.Minute)}, Backoff: backoff.Policy{Base: time.Minute, Max: time.Minute}, Refresh: time.Hour})
			waitListed(t, c)
			tc.breakA(a, b)
			err := chatOnce(context.Background(), c, model)
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
	c := openPool(t, PoolOptions{Hosts: []HostConfig{{URL: a.URL(), Slots: 2}},
		Backoff: backoff.Policy{Base: 300 * time.Millisecond, Max: time.Second}, Refresh: time.Hour})
	waitListed(t, c)
	a.SetLoadError(model, outOfMemory)
	ctx := context.Background()

	one, two := WithPriority(ctx, Interactive, "a-1"), WithPriority(ctx, Interactive, "a-2")
	var err error
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

// A host found down by the prober shows why in status: the transport's own error
// (connection refused, a DNS failure) or how long it gave no answer, never the probe's
// own ended context.
func TestPoolDownHostShowsTheRealCause(t *testing.T) {
	refused := func() string { return "http://" + testutil.FreeAddr(t) } // a port nothing listens on any more
	silent := func() string {                                            // accepts connections and never answers
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { ln.Close() })
		go func() {
			var held []net.Conn
			defer func() {
				for _, c := range held {
					c.Close()
				}
			}()
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				held = append(held, c)
			}
		}()
		return "http://" + ln.Addr().String()
	}
	for _, tc := range []struct {
		name string
		url  func() string
		want string
	}{
		{"connection_refused", refused, "connection refused"},
		{"no_answer_in_time", silent, "no answer within 200ms"},
		{"unknown_host_name", func() string { return "http://agentd-no-such-host.invalid:11434" }, "no such host"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := openPool(t, PoolOptions{Hosts: []HostConfig{{URL: tc.url()}}, HTTP: &http.Client{},
				Backoff: backoff.Policy{Base: time.Hour, Max: time.Hour}, Refresh: time.Hour, CheckTimeout: 200 * time.Millisecond})
			var h HostStatus
			testutil.Eventually(t, 10*time.Second, "the prober to find the host down", func() bool {
				h = c.PoolStatus().Hosts[0]
				return !h.Up
			})
			if !strings.Contains(h.Error, tc.want) || strings.Contains(h.Error, "context canceled") {
				t.Errorf("down host's reason = %q, want one saying %q", h.Error, tc.want)
			}
		})
	}
}

// Recheck asks the hosts again at once: a server that died since the last probe is shown
// down with its cause, and a call for its model then says why no host can serve it.
func TestPoolRecheckFindsADeadHostNow(t *testing.T) {
	a := ollamatest.NewFake(t)
	c := newTestPool(t, 1, a) // its prober would look again in an hour
	waitListed(t, c)
	a.Close()
	c.Recheck(context.Background(), 0)
	h := c.PoolStatus().Hosts[0]
	if h.Up || !strings.Contains(h.Error, "connection refused") || time.Since(h.Checked) > time.Minute {
		t.Errorf("after a recheck the dead host shows up=%v, error %q, checked %v", h.Up, h.Error, h.Checked)
	}
	err := chatOnce(context.Background(), c, ollamatest.TinyModelName)
	if !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), "connection refused") {
		t.Errorf("a call with the only host dead: %v, want ErrUnavailable naming the cause", err)
	}
}

// TestPoolSaysWhereCallsGoWhileAHostIsDown: with other hosts, a host down sends its calls
// to them; with one host there is nowhere else, and the log says the calls wait.
func TestPoolSaysWhereCallsGoWhileAHostIsDown(t *testing.T) {
	for _, tc := range []struct {
		name, want, notWant string
		hosts               int
	}{
		{"one_host", "its calls wait for it", "other hosts", 1},
		{"two_hosts", "its calls go to the other hosts", "wait for it", 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var fakes []*ollamatest.Fake
			var hosts []HostConfig
			for range tc.hosts {
				f := ollamatest.NewFake(t)
				fakes = append(fakes, f)
				hosts = append(hosts, HostConfig{URL: f.URL(), Slots: 1})
			}
			var logs testutil.SyncBuffer
			c := openPool(t, PoolOptions{Hosts: hosts, HTTP: &http.Client{}, Backoff: testBackoff, Refresh: time.Hour,
				Log: slog.New(slog.NewTextHandler(&logs, nil))})
			waitListed(t, c)
			fakes[0].SetDown(true)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			go chatOnce(ctx, c, ollamatest.TinyModelName)
			testutil.Eventually(t, 30*time.Second, "the host marked down", func() bool { return strings.Contains(logs.String(), "ollama host down") })
			if got := logs.String(); !strings.Contains(got, tc.want) || strings.Contains(got, tc.notWant) {
				t.Errorf("log, want %q and not %q:\n%s", tc.want, tc.notWant, got)
			}
		})
	}
}
