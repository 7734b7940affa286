package memory

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentd/agentd/internal/testutil"
)

var t0 = time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)

// open opens an index in a temp dir and closes it when the test ends.
func open(t *testing.T, opts Options) *Index {
	t.Helper()
	return openAt(t, t.TempDir(), opts)
}

func openAt(t *testing.T, dir string, opts Options) *Index {
	t.Helper()
	if opts.BatchDelay == 0 {
		opts.BatchDelay = time.Millisecond
	}
	ix, err := Open(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ix.Close() })
	return ix
}

// load adds docs and waits until they are searchable.
func load(t *testing.T, ix *Index, docs ...Doc) {
	t.Helper()
	if err := ix.Add(docs...); err != nil {
		t.Fatal(err)
	}
	flush(t, ix)
}

func flush(t *testing.T, ix *Index) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := ix.Flush(ctx); err != nil {
		t.Fatal(err)
	}
}

func find(t *testing.T, ix *Index, q Query) []Hit {
	t.Helper()
	hits, err := ix.Search(context.Background(), q)
	if err != nil {
		t.Fatalf("search %+v: %v", q, err)
	}
	return hits
}

func ids(hits []Hit) []string {
	out := make([]string, len(hits))
	for i, h := range hits {
		out[i] = h.ID
	}
	return out
}

func doc(id, agent string, kind Kind, text string) Doc {
	return Doc{ID: id, Agent: agent, Kind: kind, Text: text, Source: "test", Created: t0}
}

// sliceSource is a Rebuild source over docs.
func sliceSource(docs []Doc) func(func(Doc) error) error {
	return func(yield func(Doc) error) error {
		for _, d := range docs {
			if err := yield(d); err != nil {
				return err
			}
		}
		return nil
	}
}

// conceptEmbedder is a fake embedding model: one dimension per concept, synonyms share one, so
// "puppy" is close to "dog" while BM25 sees no overlap.
type conceptEmbedder struct {
	mu       sync.Mutex
	fail     error
	block    chan struct{} // when set, Embed waits for it to close
	calls    atomic.Int64
	embedded atomic.Int64
}

var concepts = map[string]int{
	"dog": 0, "puppy": 0, "hound": 0,
	"deploy": 1, "release": 1, "ship": 1,
	"database": 2, "sqlite": 2, "postgres": 2,
	"error": 3, "failure": 3, "crash": 3,
	"weather": 4, "rain": 4, "forecast": 4,
}

const conceptDims = 6

func (e *conceptEmbedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	e.calls.Add(1)
	e.mu.Lock()
	fail, block := e.fail, e.block
	e.mu.Unlock()
	if block != nil {
		select {
		case <-block:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	if fail != nil {
		return nil, fail
	}
	out := make([][]float32, len(texts))
	for i, text := range texts {
		v := make([]float32, conceptDims)
		v[conceptDims-1] = 0.1 // never all zero
		for _, w := range strings.Fields(strings.ToLower(text)) {
			if d, ok := concepts[strings.Trim(w, ".,:;!?")]; ok {
				v[d]++
			}
		}
		out[i] = v
	}
	e.embedded.Add(int64(len(texts)))
	return out, nil
}

func (e *conceptEmbedder) setFail(err error) {
	e.mu.Lock()
	e.fail = err
	e.mu.Unlock()
}

var errModelDown = errors.New("ollama is not running")

// debugLogger is a slog logger at debug level writing to w, which tests read.
func debugLogger(w *testutil.SyncBuffer) *slog.Logger {
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelDebug}))
}
