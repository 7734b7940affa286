package memory

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
)

// Concurrent searches and Fits share the cached hits' analyses while a writer keeps
// replacing the same memories: no race (run with -race), and once the writer is done
// every search shows the last texts.
func TestAttack3HitCacheConcurrentReplace(t *testing.T) {
	ix := open(t, Options{})
	ctx := context.Background()
	const n = 40
	put := func(v int) {
		for i := range n {
			text := fmt.Sprintf("kiln firing v%d memory %d %s", v, i, strings.Repeat("glaze ", 200+v%7))
			if err := ix.Add(Doc{ID: fmt.Sprintf("m-%d", i), Agent: "a", Kind: KindNote, Text: text}); err != nil {
				t.Error(err)
			}
		}
	}
	put(0)
	if err := ix.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	done := make(chan struct{})
	for range 6 {
		wg.Go(func() {
			for {
				select {
				case <-done:
					return
				default:
				}
				hits, err := ix.Search(ctx, Query{Agent: "a", Text: "kiln firing glaze", K: 30})
				if err != nil {
					t.Error(err)
					return
				}
				for _, h := range hits {
					if h.Agent != "a" {
						t.Errorf("hit of agent %q", h.Agent)
					}
				}
				Section(Prepare(hits, "kiln glaze").Fit(FitOptions{Budget: 2000}))
			}
		})
	}
	for v := 1; v <= 30; v++ {
		put(v)
		if err := ix.Flush(ctx); err != nil {
			t.Fatal(err)
		}
	}
	close(done)
	wg.Wait()
	for range 3 {
		hits, err := ix.Search(ctx, Query{Agent: "a", Text: "kiln firing glaze", K: 50})
		if err != nil {
			t.Fatal(err)
		}
		for _, h := range hits {
			if !strings.Contains(h.Text, "v30 ") {
				t.Errorf("%s: stale text %q", h.ID, h.Text[:30])
			}
		}
		for _, s := range Prepare(hits, "kiln").Fit(FitOptions{Budget: 4000}) {
			if !strings.Contains(s.Text, "v30") && !s.Trimmed {
				t.Errorf("%s shown stale: %q", s.ID, s.Text[:30])
			}
		}
	}
}
