package llm

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	ollama "github.com/ollama/ollama/api"

	"github.com/agentd/agentd/internal/backoff"
	"github.com/agentd/agentd/internal/ollamatest"
	"github.com/agentd/agentd/internal/testutil"
)

// testBackoff probes a down host again within tens of milliseconds, so tests do not wait.
var testBackoff = backoff.Policy{Base: 20 * time.Millisecond, Max: 50 * time.Millisecond}

// newTestPool makes a pool over fakes, each with slots, and closes it when the test ends.
func newTestPool(t testing.TB, slots int, fakes ...*ollamatest.Fake) *Client {
	t.Helper()
	var hosts []HostConfig
	for _, f := range fakes {
		hosts = append(hosts, HostConfig{URL: f.URL(), Slots: slots})
	}
	return openPool(t, PoolOptions{Hosts: hosts, HTTP: &http.Client{}, Backoff: testBackoff, Refresh: time.Hour})
}

// openPool makes a pool with opt and closes it when the test ends.
func openPool(t testing.TB, opt PoolOptions) *Client {
	t.Helper()
	c, err := NewPool(opt)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

// waitListed waits until the pool has read every host's /api/tags once.
func waitListed(t testing.TB, c *Client) {
	t.Helper()
	testutil.Eventually(t, 5*time.Second, "every host listed its models", func() bool {
		for _, h := range c.PoolStatus().Hosts {
			if h.Up && len(h.Models) == 0 {
				return false
			}
		}
		return true
	})
}

func chatOnce(ctx context.Context, c *Client, model string) error {
	_, err := c.Chat(ctx, ChatRequest{Model: model, Messages: []Message{{Role: "user", Content: "hi"}}, NumCtx: 2048})
	return err
}

func TestPoolRoutesByModel(t *testing.T) {
	a, b := ollamatest.NewFake(t), ollamatest.NewFake(t)
	a.SetModels("small")
	b.SetModels("big:7b")
	c := newTestPool(t, 2, a, b)
	waitListed(t, c)
	ctx := context.Background()
	for _, tc := range []struct {
		name, model string
		want        *ollamatest.Fake
	}{
		{"bare_name_goes_to_its_host", "small", a},
		{"tagged_name_goes_to_its_host", "big:7b", b},
		{"latest_tag_matches_bare_name", "small:latest", a},
	} {
		t.Run(tc.name, func(t *testing.T) {
			na, nb := len(a.Requests()), len(b.Requests())
			if err := chatOnce(ctx, c, tc.model); err != nil {
				t.Fatal(err)
			}
			gotA, gotB := len(a.Requests())-na, len(b.Requests())-nb
			if (tc.want == a) != (gotA == 1) || (tc.want == b) != (gotB == 1) {
				t.Errorf("%s: host a got %d calls, host b %d; want it on %s", tc.model, gotA, gotB, tc.want.URL())
			}
		})
	}
	// A model no host lists is still sent, so the server's own "not found" comes back.
	var nf *ModelNotFoundError
	if err := chatOnce(ctx, c, "absent"); !errors.As(err, &nf) {
		t.Errorf("absent model: got %v, want *ModelNotFoundError", err)
	}
}

func TestPoolConfiguredModelsAreTheOnlyOnes(t *testing.T) {
	a, b := ollamatest.NewFake(t), ollamatest.NewFake(t)
	c := openPool(t, PoolOptions{Hosts: []HostConfig{
		{URL: a.URL(), Models: []string{ollamatest.TinyModelName}},
		{URL: b.URL(), Models: []string{"other"}},
	}, Backoff: testBackoff, Refresh: time.Hour})
	for range 4 {
		if err := chatOnce(context.Background(), c, ollamatest.TinyModelName); err != nil {
			t.Fatal(err)
		}
	}
	if n := len(b.Requests()); n != 0 {
		t.Errorf("host b, configured for another model, got %d calls", n)
	}
	// A model no host is configured for fails at once, naming the fix.
	err := chatOnce(context.Background(), c, "absent")
	if !errors.Is(err, ErrUnavailable) {
		t.Fatalf("got %v, want ErrUnavailable", err)
	}
	if want := "ollama pull absent"; !strings.Contains(err.Error(), want) {
		t.Errorf("error %q does not say %q", err, want)
	}
}

func TestPoolSpreadsByLoad(t *testing.T) {
	a, b := ollamatest.NewFake(t), ollamatest.NewFake(t)
	// No call ends before all 8 are in flight: only 4 + 4 slots can hold them.
	var arrived sync.WaitGroup
	arrived.Add(8)
	for _, f := range []*ollamatest.Fake{a, b} {
		f.OnChat(func(*ollama.ChatRequest) (string, error) {
			arrived.Done()
			arrived.Wait()
			return "ok", nil
		})
	}
	c := newTestPool(t, 4, a, b)
	waitListed(t, c)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			if err := chatOnce(context.Background(), c, ollamatest.TinyModelName); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if na, nb := len(a.Requests()), len(b.Requests()); na != 4 || nb != 4 {
		t.Errorf("8 calls at once on 2 hosts × 4 slots: a got %d, b %d; want 4 each", na, nb)
	}
	for _, f := range []*ollamatest.Fake{a, b} {
		if most, _ := f.Load(); most > 4 {
			t.Errorf("%s generated %d at once; it has 4 slots", f.URL(), most)
		}
	}
	// Least loaded first: with one call on a, the next goes to b.
	a.OnChat(nil)
	b.OnChat(nil)
	a.SetDelay(time.Minute)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go chatOnce(ctx, c, ollamatest.TinyModelName)
	testutil.Eventually(t, 5*time.Second, "one call in flight", func() bool {
		hs := c.PoolStatus().Hosts
		return hs[0].Busy+hs[1].Busy == 1
	})
	if c.PoolStatus().Hosts[0].Busy != 1 {
		t.Fatal("two idle hosts alike: the call did not go to the first one listed")
	}
	nb := len(b.Requests())
	if err := chatOnce(context.Background(), c, ollamatest.TinyModelName); err != nil {
		t.Fatal(err)
	}
	if len(b.Requests()) != nb+1 {
		t.Error("with a call on host a, the next call did not go to the idle host b")
	}
}

func TestPoolSkipsDownHostAndRetriesIt(t *testing.T) {
	a, b := ollamatest.NewFake(t), ollamatest.NewFake(t)
	c := newTestPool(t, 1, a, b)
	waitListed(t, c)
	a.SetDown(true)
	ctx := context.Background()
	for range 6 {
		if err := chatOnce(ctx, c, ollamatest.TinyModelName); err != nil {
			t.Fatalf("a call failed while host b was up: %v", err)
		}
	}
	st := c.PoolStatus()
	if st.Hosts[0].Up || !st.Hosts[1].Up {
		t.Fatalf("hosts up: %v, %v; want a down, b up", st.Hosts[0].Up, st.Hosts[1].Up)
	}
	if st.Hosts[0].Error == "" {
		t.Error("the down host shows no error")
	}
	if n := len(b.Requests()); n != 6 {
		t.Errorf("host b answered %d of 6 calls", n)
	}

	a.SetDown(false)
	testutil.Eventually(t, 5*time.Second, "host a is probed back up", func() bool { return c.PoolStatus().Hosts[0].Up })
	before := len(a.Requests())
	for range 4 {
		if err := chatOnce(ctx, c, ollamatest.TinyModelName); err != nil {
			t.Fatal(err)
		}
	}
	if len(a.Requests()) == before {
		t.Error("host a, back up, took no calls")
	}
}

func TestPoolFailsOverACallInFlight(t *testing.T) {
	a, b := ollamatest.NewFake(t), ollamatest.NewFake(t)
	a.SetDelay(time.Minute) // a hangs until it dies
	c := newTestPool(t, 1, a, b)
	waitListed(t, c)
	done := make(chan error, 1)
	go func() { done <- chatOnce(context.Background(), c, ollamatest.TinyModelName) }()
	testutil.Eventually(t, 5*time.Second, "the call reached host a", func() bool { return len(a.Requests()) == 1 })
	start := time.Now()
	a.Close() // killed mid-call
	if err := <-done; err != nil {
		t.Fatalf("the call did not move to host b: %v", err)
	}
	// A hang bound: host a never answers on its own (a minute's delay).
	if d := time.Since(start); d > 30*time.Second {
		t.Errorf("failover took %s: the call waited on the dead host", d)
	}
	if len(b.Requests()) != 1 {
		t.Errorf("host b got %d calls, want the one moved from a", len(b.Requests()))
	}
}

func TestPoolAllDownIsUnavailable(t *testing.T) {
	a, b := ollamatest.NewFake(t), ollamatest.NewFake(t)
	c := newTestPool(t, 1, a, b)
	waitListed(t, c)
	a.SetDown(true)
	b.SetDown(true)
	start := time.Now()
	err := chatOnce(context.Background(), c, ollamatest.TinyModelName)
	if !errors.Is(err, ErrUnavailable) {
		t.Fatalf("got %v, want ErrUnavailable (the agent waits for the model)", err)
	}
	// Now that both are known down, a call fails at once instead of queueing.
	err = chatOnce(context.Background(), c, ollamatest.TinyModelName)
	if !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), "ollama serve") {
		t.Errorf("got %v, want ErrUnavailable naming the fix", err)
	}
	if d := time.Since(start); d > 30*time.Second { // a call queued for a host would wait for ever
		t.Errorf("failing took %s", d)
	}
	if _, err := c.Probe(context.Background(), ollamatest.TinyModelName); !errors.Is(err, ErrUnavailable) {
		t.Errorf("probe: got %v, want ErrUnavailable", err)
	}
}

func TestPoolQueueWaitersFailWhenLastHostGoesDown(t *testing.T) {
	a := ollamatest.NewFake(t)
	a.SetDelay(200 * time.Millisecond)
	c := newTestPool(t, 1, a)
	waitListed(t, c)
	errs := make(chan error, 3)
	for range 3 {
		go func() { errs <- chatOnce(context.Background(), c, ollamatest.TinyModelName) }()
	}
	testutil.Eventually(t, 5*time.Second, "two calls queued", func() bool { return c.PoolStatus().Queue[0].Queued == 2 })
	a.SetDown(true)
	a.Close()
	for range 3 {
		select {
		case err := <-errs:
			if !errors.Is(err, ErrUnavailable) {
				t.Errorf("got %v, want ErrUnavailable", err)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("a queued call is stuck after the only host went down")
		}
	}
}

func TestPoolCancelledWaiterLeavesTheQueue(t *testing.T) {
	a := ollamatest.NewFake(t)
	a.SetDelay(300 * time.Millisecond)
	c := newTestPool(t, 1, a)
	waitListed(t, c)
	go chatOnce(context.Background(), c, ollamatest.TinyModelName)
	testutil.Eventually(t, 5*time.Second, "one call in flight", func() bool { return c.PoolStatus().Hosts[0].Busy == 1 })
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- chatOnce(WithPriority(ctx, Batch, "s1"), c, ollamatest.TinyModelName) }()
	testutil.Eventually(t, 5*time.Second, "one batch call queued", func() bool { return c.PoolStatus().Queue[Batch].Queued == 1 })
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Errorf("got %v, want context.Canceled", err)
	}
	if q := c.PoolStatus().Queue[Batch].Queued; q != 0 {
		t.Errorf("%d batch calls still queued after the only one was cancelled", q)
	}
}

func TestPoolInteractiveWaitsAtMostOneCall(t *testing.T) {
	a := ollamatest.NewFake(t)
	var mu sync.Mutex
	var arrived []string        // the callers, in the order their calls reached the server
	gate := make(chan struct{}) // each send lets one batch call finish
	done := make(chan struct{}) // closed at the end: every call finishes
	a.OnChat(func(req *ollama.ChatRequest) (string, error) {
		who := req.Messages[0].Content
		mu.Lock()
		arrived = append(arrived, who)
		mu.Unlock()
		if who != "person" {
			select {
			case <-gate:
			case <-done:
			}
		}
		return "ok", nil
	})
	c := newTestPool(t, 1, a)
	waitListed(t, c)
	var wg sync.WaitGroup
	defer wg.Wait()
	defer close(done)
	call := func(ctx context.Context, who string) error {
		_, err := c.Chat(ctx, ChatRequest{Model: ollamatest.TinyModelName, Messages: []Message{{Role: "user", Content: who}}})
		return err
	}
	for i := range 6 { // two schedules' agents fill the queue behind the one slot
		key := []string{"s1", "s2"}[i%2]
		wg.Go(func() { call(WithPriority(context.Background(), Batch, key), key) })
	}
	testutil.Eventually(t, 5*time.Second, "one batch call in flight, five queued", func() bool {
		return c.PoolStatus().Queue[Batch].Queued == 5
	})
	errc := make(chan error, 1)
	go func() { errc <- call(context.Background(), "person") }()
	testutil.Eventually(t, 5*time.Second, "the person's call queued", func() bool {
		return c.PoolStatus().Queue[Interactive].Queued == 1
	})
	gate <- struct{}{} // the batch call in flight ends
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	got := slices.Clone(arrived)
	mu.Unlock()
	if len(got) < 2 || got[1] != "person" {
		t.Errorf("calls reached the server in the order %v; want the person's right after the one batch call in flight", got)
	}
	if st := c.PoolStatus().Queue[Interactive]; st.Served != 1 || st.Queued != 0 {
		t.Errorf("interactive queue: %+v, want 1 served, none waiting", st)
	}

	// The batch calls left take turns by schedule while both have some.
	for range 5 {
		gate <- struct{}{}
	}
	testutil.Eventually(t, 5*time.Second, "every batch call answered", func() bool { return c.PoolStatus().Queue[Batch].Served == 6 })
	mu.Lock()
	rest := slices.Clone(arrived[2:])
	mu.Unlock()
	for i := 1; i < 4; i++ {
		if rest[i] == rest[i-1] {
			t.Errorf("batch calls reached the server as %v: one schedule went twice while the other waited", rest)
			break
		}
	}
}

func TestFairQueueOrder(t *testing.T) {
	for _, tc := range []struct {
		name string
		push []string // "i" interactive, else a batch key
		want []string
	}{
		{"interactive_first", []string{"a", "i", "b", "i"}, []string{"i", "i", "a", "b"}},
		{"batch_round_robin_by_key", []string{"a", "a", "a", "b", "c"}, []string{"a", "b", "c", "a", "a"}},
		{"busy_key_cannot_starve_a_late_one", []string{"a", "a", "a", "a", "b"}, []string{"a", "b", "a", "a", "a"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var q fairQueue
			for _, k := range tc.push {
				w := &waiter{class: Batch, key: k}
				if k == "i" {
					w.class = Interactive
				}
				q.push(w, false)
			}
			var got []string
			for {
				w := q.next(func(*waiter) bool { return true })
				if w == nil {
					break
				}
				got = append(got, map[bool]string{true: "i", false: w.key}[w.class == Interactive])
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("order %v, want %v", got, tc.want)
			}
		})
	}
}

func TestFairQueueSkipsWhatNoFreeHostServes(t *testing.T) {
	var q fairQueue
	q.push(&waiter{class: Batch, key: "a", model: "big"}, false)
	q.push(&waiter{class: Batch, key: "b", model: "small"}, false)
	w := q.next(func(w *waiter) bool { return w.model == "small" })
	if w == nil || w.key != "b" {
		t.Fatalf("got %+v, want b's call: a's model has no free host", w)
	}
	if q.len(Batch) != 1 {
		t.Errorf("%d left, want a's call", q.len(Batch))
	}
}

func TestNewPoolRefusesBadHosts(t *testing.T) {
	for _, tc := range []struct {
		name  string
		hosts []HostConfig
	}{
		{"no_hosts", nil},
		{"same_host_twice", []HostConfig{{URL: "127.0.0.1:11434"}, {URL: "http://127.0.0.1:11434"}}},
		{"bad_scheme", []HostConfig{{URL: "ftp://x"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if c, err := NewPool(PoolOptions{Hosts: tc.hosts}); err == nil {
				c.Close()
				t.Error("accepted")
			}
		})
	}
}

func TestPoolRelistsModelsOfABusyHost(t *testing.T) {
	a := ollamatest.NewFake(t)
	c := openPool(t, PoolOptions{Hosts: []HostConfig{{URL: a.URL()}}, Backoff: testBackoff, Refresh: 50 * time.Millisecond})
	waitListed(t, c)
	a.SetModels(ollamatest.TinyModelName, "pulled-later")
	// Calls keep the host answering; its models are listed again all the same.
	testutil.Eventually(t, 5*time.Second, "the model pulled later to be listed", func() bool {
		if err := chatOnce(context.Background(), c, ollamatest.TinyModelName); err != nil {
			t.Fatal(err)
		}
		return slices.Contains(c.PoolStatus().Hosts[0].Models, "pulled-later:latest")
	})
}

// A caller waiting out ErrUnavailable is woken when a host that serves its model comes
// back, not at the end of its own backoff; a caller waiting for a model no host has
// sleeps on.
func TestPoolServableWakesWhenAHostComesBack(t *testing.T) {
	a := ollamatest.NewFake(t)
	c := newTestPool(t, 1, a)
	waitListed(t, c)
	a.SetDown(true)
	if err := chatOnce(context.Background(), c, ollamatest.TinyModelName); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("got %v, want ErrUnavailable", err)
	}
	back, stop := c.Servable(ollamatest.TinyModelName)
	defer stop()
	absent, stopAbsent := c.Servable("absent")
	defer stopAbsent()
	select {
	case <-back:
		t.Fatal("woken while the only host is down")
	default:
	}
	a.SetDown(false)
	select {
	case <-back:
	case <-time.After(10 * time.Second):
		t.Fatal("not woken 10s after the host came back")
	}
	// Both were looked at under one lock when the host came back.
	select {
	case <-absent:
		t.Error("a wait for a model the host does not have ended")
	default:
	}
	c.Pool().mu.Lock()
	n := len(c.Pool().watches)
	c.Pool().mu.Unlock()
	if n != 1 {
		t.Errorf("%d waits held, want the one still waiting", n)
	}
}

// A model kept off a host after it failed there wakes its callers when its time off ends.
func TestPoolServableWakesWhenAModelIsLetBackOn(t *testing.T) {
	a := ollamatest.NewFake(t)
	c := openPool(t, PoolOptions{Hosts: []HostConfig{{URL: a.URL(), Slots: 1}}, Backoff: testBackoff, Refresh: time.Hour})
	waitListed(t, c)
	p := c.Pool()
	p.mu.Lock()
	p.markModelTrouble(p.hosts[0], ollamatest.TinyModelName, errors.New("HTTP 500: model requires more system memory"))
	p.mu.Unlock()
	back, stop := c.Servable(ollamatest.TinyModelName)
	defer stop()
	select {
	case <-back:
	case <-time.After(10 * time.Second):
		t.Fatal("not woken 10s after the model's time off the host ended")
	}
}
