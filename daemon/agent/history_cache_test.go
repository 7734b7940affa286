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

// The history's line cache reads only new episodes, keeps the newest n, and shows a
// summary once the agent is forgotten after summaries were stored.
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
	got := func(n int) string {
		t.Helper()
		var out []string
		err := st.View(context.Background(), func(tx *store.Tx) error {
			lines, err := c.lines(tx, a.ID, n)
			for _, l := range lines {
				out = append(out, l.text)
			}
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		return strings.Join(out, " | ")
	}
	add(1, 3)
	if g, want := got(5), `Step 3: read_file(path="n3") → succeeded | Step 2: read_file(path="n2") → succeeded | Step 1: read_file(path="n1") → succeeded`; g != want {
		t.Fatalf("first read = %s\nwant %s", g, want)
	}
	add(4, 6)
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
}
