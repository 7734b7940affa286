package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentd/agentd/daemon/client"
	"github.com/agentd/agentd/daemon/store"
)

// The history's line cache reads nothing while the agent's episode generation stands,
// then only new episodes, keeps the newest n, and shows a summary once the agent is
// forgotten after summaries were stored.
func TestOlderCache(t *testing.T) {
	st, err := store.Open(context.Background(), filepath.Join(t.TempDir(), "agentd.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	a := &store.Agent{Agent: client.Agent{ID: "a-1", Name: "one", State: client.StateIdle, Workspace: t.TempDir()}}
	add := func(from, to int) {
		t.Helper()
		err := st.Tx(context.Background(), func(tx *store.Tx) error {
			if from == 1 {
				if err := tx.InsertAgent(a); err != nil {
					return err
				}
			}
			for i := from; i <= to; i++ {
				if err := tx.InsertEpisode(a.ID, &client.Episode{RunID: "r", Step: i, ProposalID: fmt.Sprint("p-", i), Command: "read_file",
					Args: json.RawMessage(fmt.Sprintf(`{"path":"n%d"}`, i)), Outcome: "succeeded"}); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	var c olderCache
	var gens episodeGens
	var recent []store.EpisodeLine // what recentEpisodes read, when set
	got := func(n int) string {
		t.Helper()
		var out []string
		lines, err := c.lines(context.Background(), st, &gens, a.ID, n, recent)
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range lines {
			out = append(out, l.text)
		}
		return strings.Join(out, " | ")
	}
	add(1, 3)
	if g, want := got(5), `Step 3: read_file(path="n3") → succeeded | Step 2: read_file(path="n2") → succeeded | Step 1: read_file(path="n1") → succeeded`; g != want {
		t.Fatalf("first read = %s\nwant %s", g, want)
	}
	add(4, 6)
	if g := got(5); !strings.HasPrefix(g, "Step 3:") {
		t.Fatalf("read again within a generation = %s; want the cached lines", g)
	}
	gens.bump(a.ID) // as recordEpisode does once the episodes commit
	if g := got(5); !strings.HasPrefix(g, `Step 6:`) || strings.Count(g, "|") != 4 || !strings.HasSuffix(g, `Step 2: read_file(path="n2") → succeeded`) {
		t.Fatalf("after three more = %s; want steps 6 down to 2", g)
	}
	// A summary shows once the agent is forgotten (summarize does that after storing).
	err = st.Tx(context.Background(), func(tx *store.Tx) error {
		heads, err := tx.EpisodeHeads(a.ID, 0, 1)
		if err != nil {
			return err
		}
		return tx.SetEpisodeSummary(a.ID, heads[0].ID, "read the sixth note")
	})
	if err != nil {
		t.Fatal(err)
	}
	if g := got(5); strings.Contains(g, "read the sixth note") {
		t.Fatalf("cached lines changed without forget: %s", g)
	}
	c.forget(a.ID)
	if g := got(5); !strings.HasPrefix(g, "Step 6: read the sixth note | Step 5:") {
		t.Fatalf("after forget = %s", g)
	}
	// New episodes that the latest ones (read for the verbatim history) reach back past
	// come from those, with no read of their own: a lie in recent shows it was used.
	add(7, 8)
	gens.bump(a.ID)
	err = st.View(context.Background(), func(tx *store.Tx) (err error) { recent, err = tx.EpisodeLines(a.ID, 4, 100); return })
	if err != nil {
		t.Fatal(err)
	}
	recent[len(recent)-1].Summary = "from recent"
	if g := got(5); !strings.HasPrefix(g, "Step 8: from recent | Step 7: read_file(path=\"n7\") → succeeded | Step 6: read the sixth note") {
		t.Fatalf("extended from recent = %s", g)
	}
}
