package memory

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentd/agentd/internal/testutil"
)

func corpus(prefix string, n int) []Doc {
	docs := make([]Doc, n)
	for i := range docs {
		docs[i] = doc(fmt.Sprintf("%s%d", prefix, i), "a", KindEpisode, fmt.Sprintf("alpha step %d of %s", i, prefix))
	}
	return docs
}

func TestRebuildSwapsWhileSearching(t *testing.T) {
	dir := t.TempDir()
	ix := ready(t, dir, Options{BatchSize: 500})
	load(t, ix, corpus("old", 2000)...)
	oldGen := ix.Stats().Generation

	searched, stopSearching := searchConstantly(t, ix, Query{Agent: "a", Text: "alpha"})

	// The source is a snapshot taken before "interim" was added and "new7" deleted; both
	// changes happen while the rebuild runs and must survive the swap.
	source := corpus("new", 3000)
	halfway := make(chan struct{})
	proceed := make(chan struct{})
	go func() {
		<-halfway
		if err := errors.Join(ix.Add(doc("interim", "a", KindNote, "alpha interim memory added while the rebuild ran")), ix.Delete("new7")); err != nil {
			t.Error(err)
		}
		flush(t, ix) // searchable in the old generation at once
		close(proceed)
	}()
	err := ix.Rebuild(context.Background(), func(yield func(Doc) error) error {
		for i, d := range source {
			if i == len(source)/2 {
				close(halfway)
				<-proceed
			}
			if err := yield(d); err != nil {
				return err
			}
		}
		return nil
	})
	// Let the searchers run on the new generation too: of four searches ending after the
	// swap, at most three (one per searcher) began before it.
	swapped := searched()
	testutil.Eventually(t, 10*time.Second, "a search on the new generation", func() bool { return searched() >= swapped+4 })
	t.Logf("%d searches during the rebuild", stopSearching())
	if err != nil {
		t.Fatal(err)
	}

	st := ix.Stats()
	if st.Generation == oldGen || st.Docs != 3000 || st.NeedsRebuild {
		t.Fatalf("after rebuild: %+v (old generation %s)", st, oldGen)
	}
	if cur, _ := readCurrent(dir); cur != st.Generation {
		t.Fatalf("CURRENT names %q, live is %q", cur, st.Generation)
	}
	if _, err := os.Stat(filepath.Join(dir, oldGen)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("old generation left behind: %v", err)
	}
	for _, c := range []struct {
		text string
		want []string
	}{{"interim", []string{"interim"}}, {"old", nil}, {"7 new", []string{"new70", "new700", "new701"}}} {
		got := ids(find(t, ix, Query{Agent: "a", Text: c.text, K: 3}))
		if c.want == nil && len(got) == 0 {
			continue
		}
		if c.text == "7 new" {
			if slices.Contains(got, "new7") {
				t.Errorf("deleted memory new7 came back: %v", got)
			}
			continue
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("%q: got %v, want %v", c.text, got, c.want)
		}
	}
}

// searchConstantly runs q on three goroutines until stop is called (which returns the
// number of searches; searched counts them so far); every search must succeed with hits.
func searchConstantly(t *testing.T, ix *Index, q Query) (searched, stop func() int64) {
	var searches atomic.Int64
	halt := untilStopped(3, func() {
		hits, err := ix.Search(context.Background(), q)
		searches.Add(1)
		if err != nil || len(hits) == 0 {
			t.Errorf("search during rebuild: %v, %d hits", err, len(hits))
		}
	})
	return searches.Load, func() int64 {
		halt()
		return searches.Load()
	}
}

// untilStopped runs each on n goroutines, again and again, until stop is called; stop
// returns once they all ended.
func untilStopped(n int, each func()) (stop func()) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			for {
				select {
				case <-done:
					return
				default:
				}
				each()
			}
		})
	}
	return func() {
		close(done)
		wg.Wait()
	}
}

func TestRebuildFailureKeepsLiveIndex(t *testing.T) {
	dir := t.TempDir()
	ix := ready(t, dir, Options{})
	load(t, ix, corpus("live", 10)...)
	gen := ix.Stats().Generation
	boom := errors.New("store read failed")
	err := ix.Rebuild(context.Background(), func(yield func(Doc) error) error {
		for _, d := range corpus("new", 10) {
			if err := yield(d); err != nil {
				return err
			}
		}
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("got %v", err)
	}
	names, _ := generations(dir)
	if st := ix.Stats(); st.Generation != gen || st.Docs != 10 || len(names) != 1 {
		t.Fatalf("stats %+v, generations %v", st, names)
	}
}

func TestRebuildOneAtATimeAndCloseCancels(t *testing.T) {
	ix := ready(t, t.TempDir(), Options{})
	started := make(chan struct{})
	result := make(chan error, 1)
	go func() {
		result <- ix.Rebuild(context.Background(), func(yield func(Doc) error) error {
			close(started)
			for i := 0; ; i++ { // an endless store: only cancellation ends it
				if err := yield(doc(fmt.Sprint("m", i), "a", KindNote, "x")); err != nil {
					return err
				}
			}
		})
	}()
	<-started
	if err := ix.Rebuild(context.Background(), sliceSource(nil)); !errors.Is(err, ErrRebuildRunning) {
		t.Fatalf("second rebuild: %v", err)
	}
	if err := ix.Close(); err != nil {
		t.Fatal(err)
	}
	if err := <-result; !errors.Is(err, context.Canceled) {
		t.Fatalf("rebuild after Close: %v", err)
	}
}

func TestRebuildSkipsBadRows(t *testing.T) {
	ix := ready(t, t.TempDir(), Options{})
	docs := append(corpus("ok", 3), Doc{ID: "", Kind: KindNote, Text: "no id"}, Doc{ID: "k", Kind: "bogus"})
	if err := ix.Rebuild(context.Background(), sliceSource(docs)); err != nil {
		t.Fatal(err)
	}
	if n := ix.Stats().Docs; n != 3 {
		t.Fatalf("%d docs", n)
	}
}

// corruptions damage a closed index the ways disks and people do.
var corruptions = []struct {
	name   string
	damage func(t *testing.T, dir, gen string)
}{
	{"segment_bytes_flipped", func(t *testing.T, dir, gen string) {
		f := zapFile(t, dir, gen)
		b, _ := os.ReadFile(f)
		for i := len(b) / 3; i < len(b)/3+16; i++ {
			b[i] ^= 0x5a
		}
		os.WriteFile(f, b, 0o600)
	}},
	{"segment_truncated", func(t *testing.T, dir, gen string) {
		f := zapFile(t, dir, gen)
		fi, _ := os.Stat(f)
		os.Truncate(f, fi.Size()/2)
	}},
	{"segment_deleted", func(t *testing.T, dir, gen string) { os.Remove(zapFile(t, dir, gen)) }},
	{"root_bolt_garbage", func(t *testing.T, dir, gen string) {
		os.WriteFile(filepath.Join(dir, gen, indexSubdir, "store", "root.bolt"), []byte(strings.Repeat("garbage", 1000)), 0o600)
	}},
	{"index_meta_garbage", func(t *testing.T, dir, gen string) {
		os.WriteFile(filepath.Join(dir, gen, indexSubdir, "index_meta.json"), []byte("{not json"), 0o600)
	}},
	{"generation_deleted", func(t *testing.T, dir, gen string) { os.RemoveAll(filepath.Join(dir, gen)) }},
	{"current_garbage", func(t *testing.T, dir, gen string) {
		os.WriteFile(filepath.Join(dir, currentFile), []byte("../../etc\n"), 0o600)
	}},
	{"directory_deleted", func(t *testing.T, dir, gen string) { os.RemoveAll(dir) }},
}

func zapFile(t *testing.T, dir, gen string) string {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(dir, gen, indexSubdir, "store", "*.zap"))
	if len(files) == 0 {
		t.Fatal("no segment file to damage")
	}
	return files[0]
}

func TestCorruptIndexDetectedAndRebuilt(t *testing.T) {
	source := corpus("m", 200)
	for _, c := range corruptions {
		t.Run(c.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "memory")
			ix, err := Open(dir, Options{})
			if err != nil {
				t.Fatal(err)
			}
			if err := ix.Rebuild(context.Background(), sliceSource(source)); err != nil {
				t.Fatal(err)
			}
			gen := ix.Stats().Generation
			if err := ix.Close(); err != nil {
				t.Fatal(err)
			}
			c.damage(t, dir, gen)

			logs := &testutil.SyncBuffer{}
			ix = openAt(t, dir, Options{Logger: debugLogger(logs)})
			if !ix.NeedsRebuild() {
				t.Fatal("damage not detected")
			}
			t.Logf("reason: %s", ix.RebuildReason())
			if _, err := ix.Search(context.Background(), Query{Agent: "a", Text: "alpha"}); err != nil {
				t.Fatalf("search while damaged: %v", err)
			}
			if err := ix.Rebuild(context.Background(), sliceSource(source)); err != nil {
				t.Fatal(err)
			}
			if ix.NeedsRebuild() {
				t.Fatalf("still flagged: %s", ix.RebuildReason())
			}
			if hits := find(t, ix, Query{Agent: "a", Text: "alpha 117"}); len(hits) == 0 || hits[0].ID != "m117" {
				t.Fatalf("after rebuild: %v", ids(hits))
			}
			if err := ix.Close(); err != nil {
				t.Fatal(err)
			}
			ix = openAt(t, dir, Options{})
			if ix.NeedsRebuild() || ix.Stats().Docs != 200 {
				t.Fatalf("reopen: %+v", ix.Stats())
			}
		})
	}
}
