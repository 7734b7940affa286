package llm

import (
	"context"
	"fmt"
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
