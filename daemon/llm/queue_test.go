package llm

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

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
