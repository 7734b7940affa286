package memory

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentd/agentd/internal/testutil"
)

// ready opens an index and runs the first (empty) rebuild a fresh directory asks for.
func ready(t *testing.T, dir string, opts Options) *Index {
	t.Helper()
	ix := openAt(t, dir, opts)
	if err := ix.Rebuild(context.Background(), sliceSource(nil)); err != nil {
		t.Fatal(err)
	}
	if ix.NeedsRebuild() {
		t.Fatalf("still needs a rebuild: %s", ix.RebuildReason())
	}
	return ix
}

func TestAddIsAsyncAndFlushMakesSearchable(t *testing.T) {
	ix := open(t, Options{BatchDelay: time.Hour, BatchSize: 1000})
	if err := ix.Add(doc("m1", "a", KindNote, "the cake is in the oven")); err != nil {
		t.Fatal(err)
	}
	// Nothing indexes it on its own meanwhile.
	testutil.Hold(20*time.Millisecond, func() bool { return len(find(t, ix, Query{Agent: "a", Text: "cake"})) == 0 })
	if hits := find(t, ix, Query{Agent: "a", Text: "cake"}); len(hits) != 0 {
		t.Fatalf("indexed before the batch filled or a flush: %v", ids(hits))
	}
	if st := ix.Stats(); st.Queued != 1 {
		t.Fatalf("queued %d, want 1", st.Queued)
	}
	flush(t, ix)
	if hits := find(t, ix, Query{Agent: "a", Text: "cake"}); len(hits) != 1 {
		t.Fatalf("after flush: %v", ids(hits))
	}
}

func TestAddNeverBlocksAndQueueFullDrops(t *testing.T) {
	dir := t.TempDir()
	emb := &conceptEmbedder{block: make(chan struct{})}
	ix := ready(t, dir, Options{Embedder: emb, QueueSize: 10, BatchSize: 5, BatchDelay: -1})
	added := make(chan error, 1)
	go func() {
		// The writer takes the first batch and sticks in Embed; the next ten fill the queue.
		// The first five are queued in one call, so the writer cannot take part of them.
		var first []Doc
		for i := range 5 {
			first = append(first, doc(fmt.Sprint("first", i), "a", KindNote, "dog"))
		}
		err := ix.Add(first...)
		testutil.Wait(10*time.Second, func() bool { return emb.calls.Load() > 0 })
		for i := range 10 {
			err = errors.Join(err, ix.Add(doc(fmt.Sprint("queued", i), "a", KindNote, "dog")))
		}
		added <- err
	}()
	select {
	case err := <-added:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Add blocked on a stuck writer")
	}
	err := ix.Add(doc("dropped", "a", KindNote, "dog"))
	if !errors.Is(err, ErrQueueFull) {
		t.Fatalf("Add on a full queue: %v", err)
	}
	st := ix.Stats()
	if st.Dropped != 1 || !st.NeedsRebuild || !strings.Contains(st.RebuildReason, "queue full") {
		t.Fatalf("stats %+v", st)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := ix.Flush(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Flush with a stuck embedder: %v", err)
	}
	close(emb.block)
	flush(t, ix)
	if n := ix.Stats().Docs; n != 15 {
		t.Fatalf("%d docs, want 15", n)
	}
	if err := ix.Close(); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, needsRebuildFile))
	if err != nil || !strings.Contains(string(b), "queue full") {
		t.Fatalf("marker: %q, %v", b, err)
	}
	ix = openAt(t, dir, Options{})
	if !ix.NeedsRebuild() {
		t.Fatal("the rebuild flag did not survive a restart")
	}
}

func TestCloseDrainsQueue(t *testing.T) {
	dir := t.TempDir()
	ix := ready(t, dir, Options{BatchDelay: time.Hour, BatchSize: 700})
	var docs []Doc
	for i := range 5000 {
		docs = append(docs, doc(fmt.Sprint("m", i), "a", KindEpisode, fmt.Sprintf("step %d ran the tests", i)))
	}
	if err := ix.Add(docs...); err != nil {
		t.Fatal(err)
	}
	if err := ix.Close(); err != nil {
		t.Fatal(err)
	}
	if err := ix.Add(doc("late", "a", KindNote, "x")); !errors.Is(err, ErrClosed) {
		t.Fatalf("Add after Close: %v", err)
	}
	if _, err := ix.Search(context.Background(), Query{Agent: "a", Text: "tests"}); !errors.Is(err, ErrClosed) {
		t.Fatalf("Search after Close: %v", err)
	}
	ix = openAt(t, dir, Options{})
	if ix.NeedsRebuild() {
		t.Fatalf("clean close flagged: %s", ix.RebuildReason())
	}
	if n := ix.Stats().Docs; n != 5000 {
		t.Fatalf("%d docs after reopen, want 5000", n)
	}
	if hits := find(t, ix, Query{Agent: "a", Text: "4999"}); len(hits) != 1 || hits[0].ID != "m4999" {
		t.Fatalf("last memory: %v", ids(hits))
	}
}

func TestDeleteAndReplace(t *testing.T) {
	emb := &conceptEmbedder{}
	ix := open(t, Options{Embedder: emb})
	load(t, ix, doc("d1", "a", KindNote, "dog walking schedule"), doc("d2", "a", KindNote, "dog food brand"))
	if err := ix.Delete("d1"); err != nil {
		t.Fatal(err)
	}
	load(t, ix, doc("d2", "a", KindNote, "database backup schedule")) // replaces d2
	st := ix.Stats()
	if st.Docs != 1 || st.Vectors != 1 {
		t.Fatalf("stats %+v", st)
	}
	if hits := find(t, ix, Query{Agent: "a", Text: "dog"}); len(hits) != 1 || hits[0].ID != "d2" || hits[0].BM25 != 0 {
		t.Fatalf("dog: %+v", hits) // only the vector side could find d2 for "dog": none left
	}
}

func TestInvalidDocsRejected(t *testing.T) {
	ix := open(t, Options{})
	cases := []struct {
		name string
		doc  Doc
	}{
		{"empty_id", Doc{Kind: KindNote, Text: "x"}},
		{"unknown_kind", Doc{ID: "x", Kind: "diary", Text: "x"}},
		{"nul_in_agent", Doc{ID: "x", Agent: "a\x00b", Kind: KindNote}},
		{"non_utf8_id", Doc{ID: "\xff", Kind: KindNote}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := ix.Add(doc("ok", "a", KindNote, "fine"), c.doc)
			if !errors.Is(err, ErrInvalidDoc) {
				t.Fatalf("got %v", err)
			}
			if st := ix.Stats(); st.Queued+int(st.Docs) != 0 {
				t.Fatalf("part of a rejected call was queued: %+v", st)
			}
		})
	}
}

func TestOpenTwiceFails(t *testing.T) {
	dir := t.TempDir()
	openAt(t, dir, Options{})
	if ix, err := Open(dir, Options{}); err == nil {
		ix.Close()
		t.Fatal("a second Open of the same directory succeeded")
	}
}

func TestUncleanShutdownNeedsRebuild(t *testing.T) {
	dir := t.TempDir()
	ix := ready(t, dir, Options{})
	load(t, ix, doc("m1", "a", KindNote, "kept"))
	if err := ix.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, dirtyFile), nil, 0o600); err != nil { // as a crash leaves it
		t.Fatal(err)
	}
	ix = openAt(t, dir, Options{})
	if !ix.NeedsRebuild() || !strings.Contains(ix.RebuildReason(), "did not close") {
		t.Fatalf("needs %v: %q", ix.NeedsRebuild(), ix.RebuildReason())
	}
	if hits := find(t, ix, Query{Agent: "a", Text: "kept"}); len(hits) != 1 {
		t.Fatal("the surviving index is not served")
	}
}
