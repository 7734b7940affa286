package llm

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentd/agentd/internal/ollamatest"
)

// benchCall is how long one fake model call takes: long against the daemon's own cost,
// short enough for many calls a second.
const benchCall = 50 * time.Millisecond

// benchHosts starts n fakes that generate slots replies at once each (OLLAMA_NUM_PARALLEL),
// and a pool over them.
func benchHosts(b *testing.B, n, slots int) (*Client, []*ollamatest.Fake) {
	b.Helper()
	var fakes []*ollamatest.Fake
	for range n {
		f := ollamatest.NewFake(b)
		f.SetDelay(benchCall)
		f.SetParallel(slots)
		fakes = append(fakes, f)
	}
	c := newTestPool(b, slots, fakes...)
	waitListed(b, c)
	return c, fakes
}

// BenchmarkPoolBusy measures how busy the model slots are with 8 runnable agents on 2
// hosts × 4 slots: each agent calls again as soon as its call returns. busy% is the slot
// time the fakes spent generating over the wall time of all 8 slots (goal ≥ 95).
func BenchmarkPoolBusy(b *testing.B) {
	c, fakes := benchHosts(b, 2, 4)
	const agents = 8
	var left atomic.Int64
	left.Store(int64(max(b.N, agents)))
	var busy0 time.Duration
	for _, f := range fakes {
		_, d := f.Load()
		busy0 += d
	}
	b.ResetTimer()
	start := time.Now()
	var wg sync.WaitGroup
	for i := range agents {
		wg.Go(func() {
			ctx := WithPriority(context.Background(), Batch, fmt.Sprintf("agent-%d", i))
			for left.Add(-1) >= 0 {
				if err := chatOnce(ctx, c, ollamatest.TinyModelName); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	wall := time.Since(start)
	b.StopTimer()
	var busy time.Duration
	for _, f := range fakes {
		most, d := f.Load()
		busy += d
		if most > 4 {
			b.Errorf("%s generated %d at once; it has 4 slots", f.URL(), most)
		}
	}
	b.ReportMetric(100*float64(busy-busy0)/float64(wall*8), "busy%")
}

// BenchmarkPoolInteractiveWait measures how long a person's calls wait in the queue while
// 16 scheduled agents keep 2 hosts × 4 slots full: the p99 should stay within one call
// (50ms), while batch calls wait for one another.
func BenchmarkPoolInteractiveWait(b *testing.B) {
	c, _ := benchHosts(b, 2, 4)
	var mu sync.Mutex
	waits := map[Class][]time.Duration{}
	c.Pool().ObserveQueue(func(cl Class, d time.Duration) {
		mu.Lock()
		waits[cl] = append(waits[cl], d)
		mu.Unlock()
	})
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for i := range 16 {
		wg.Go(func() {
			bctx := WithPriority(ctx, Batch, fmt.Sprintf("schedule-%d", i%4))
			for ctx.Err() == nil {
				chatOnce(bctx, c, ollamatest.TinyModelName)
			}
		})
	}
	time.Sleep(5 * benchCall) // the batch load fills the queue first
	b.ResetTimer()
	for range b.N {
		if err := chatOnce(context.Background(), c, ollamatest.TinyModelName); err != nil {
			b.Fatal(err)
		}
		time.Sleep(benchCall / 2) // a person reads before answering
	}
	b.StopTimer()
	cancel()
	wg.Wait()
	mu.Lock()
	defer mu.Unlock()
	b.ReportMetric(ms(percentile(waits[Interactive], 50)), "interactive-p50-ms")
	b.ReportMetric(ms(percentile(waits[Interactive], 99)), "interactive-p99-ms")
	b.ReportMetric(ms(percentile(waits[Batch], 50)), "batch-p50-ms")
	b.ReportMetric(ms(percentile(waits[Batch], 99)), "batch-p99-ms")
}

func percentile(ds []time.Duration, p int) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[(len(s)-1)*p/100]
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// Every batch key with a call waiting gets a turn within one round: at most one dispatch
// per other waiting key passes before it is served, however the others re-queue. The
// simulation is deterministic (a seeded generator, no clock): keys whose call is served
// come back a few dispatches later (the call ran), a third of them with two calls at
// once (an agent's summary beside its step), and a slot is given 400 times.
func TestFairQueueServesEveryBatchKeyWithinARound(t *testing.T) {
	for _, tc := range []struct {
		name string
		// back is how many dispatches a served call takes before its key queues its next.
		back func(*rand.Rand) int
		// refuse, when set, keeps a key's call waiting (no free host for its model) at
		// some dispatches; the key keeps its place until a host takes it.
		refuse func(key string, dispatch int) bool
	}{
		{"keys_come_back_at_once", func(*rand.Rand) int { return 0 }, nil},
		{"keys_come_back_after_their_call", func(r *rand.Rand) int { return r.IntN(4) }, nil},
		{"some_models_have_no_free_host_at_times", func(r *rand.Rand) int { return r.IntN(3) },
			func(key string, d int) bool { return key == "k03" && d%5 != 0 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			const keys, dispatches = 12, 400
			rng := rand.New(rand.NewPCG(30, 1))
			var q fairQueue
			waiting := map[string]int{} // key → calls waiting
			// passed counts, for each key waiting, the slots given to other keys since it
			// began to wait or last had its turn, while a host could have taken its call.
			passed := map[string]int{}
			push := func(key string) {
				waiting[key]++
				q.push(&waiter{class: Batch, key: key}, false)
			}
			type flight struct {
				key  string
				back int // dispatch at which its key queues its next call
			}
			var inFlight []flight
			for k := range keys {
				key := fmt.Sprintf("k%02d", k)
				push(key)
				if k%3 == 0 {
					push(key) // its summary call beside its step call
				}
			}
			served := map[string]int{}
			worst, worstKey := 0, ""
			for d := 0; d < dispatches; d++ {
				var still []flight
				for _, f := range inFlight {
					if f.back <= d {
						push(f.key)
					} else {
						still = append(still, f)
					}
				}
				inFlight = still
				refused := func(key string) bool { return tc.refuse != nil && tc.refuse(key, d) }
				w := q.next(func(w *waiter) bool { return !refused(w.key) })
				if w == nil {
					t.Fatalf("dispatch %d: nothing served with %d keys waiting", d, len(waiting))
				}
				for key := range waiting {
					if key == w.key || refused(key) {
						continue // a refused call waits for a host, not for its turn
					}
					if passed[key]++; passed[key] > worst {
						worst, worstKey = passed[key], key
					}
				}
				served[w.key]++
				passed[w.key] = 0
				if waiting[w.key]--; waiting[w.key] == 0 {
					delete(waiting, w.key)
				}
				inFlight = append(inFlight, flight{w.key, d + 1 + tc.back(rng)})
			}
			if worst >= keys {
				t.Errorf("key %s saw %d other calls served before its turn; with %d keys a round serves at most %d others (served: %v)",
					worstKey, worst, keys, keys-1, served)
			}
			for k := range keys {
				if key := fmt.Sprintf("k%02d", k); served[key] == 0 {
					t.Errorf("key %s was never served in %d dispatches (served: %v)", key, dispatches, served)
				}
			}
		})
	}
}
