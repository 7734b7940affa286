package memory

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/blevesearch/bleve/v2/document"
)

// Queue-full policy: Add never blocks. When the queue (Options.QueueSize) has no room for all
// the memories of one call, none of them is queued, Add returns ErrQueueFull, Stats.Dropped
// grows and NeedsRebuild turns true (persisted in NEEDS_REBUILD): the memories are safe in
// the store and the next Rebuild restores them. At the default size the writer would have to
// fall more than ten seconds behind for that to happen.

type opKind uint8

const (
	opAdd opKind = iota
	opDelete
	opSwap // installs a rebuilt generation; see Rebuild
)

type op struct {
	kind opKind
	doc  Doc // opAdd: the memory; opDelete: only doc.ID
	// dates is an opAdd's dates field (dateTerms), worked out by the caller of Add so the
	// writer, which indexes for every agent, does not spend its time on it.
	dates string
	swap  *swapRequest
}

// queue holds operations for the writer goroutine, in order.
type queue struct {
	mu       sync.Mutex
	ops      []op
	max      int
	enqueued uint64 // operations ever queued; Flush waits for the writer to reach it
	flushers int    // Flush calls waiting: the writer does not wait for batches to fill
	closed   bool

	// While a rebuild runs, every queued operation is also kept here so it can be replayed
	// into the new generation before the swap (the rebuild's source may predate it).
	teeing    bool
	tee       []op
	teeLosses uint64

	wake chan struct{} // something was queued or closed
	kick chan struct{} // stop waiting for a batch to fill
}

func (q *queue) init(max int) {
	q.max = max
	q.wake = make(chan struct{}, 1)
	q.kick = make(chan struct{}, 1)
}

func signal(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}

func (q *queue) close() {
	q.mu.Lock()
	q.closed = true
	q.mu.Unlock()
	signal(q.wake)
	signal(q.kick)
}

// next waits for operations and returns up to max of them, never mixing a swap with others.
// Once something is queued it waits up to delay for a fuller batch, unless a Flush is
// waiting or the queue is closing. It returns false when the queue is closed and empty.
func (q *queue) next(max int, delay time.Duration) ([]op, bool) {
	q.mu.Lock()
	for len(q.ops) == 0 {
		if q.closed {
			q.mu.Unlock()
			return nil, false
		}
		q.mu.Unlock()
		<-q.wake
		q.mu.Lock()
	}
	if len(q.ops) < max && !q.closed && q.flushers == 0 && delay > 0 && q.ops[0].kind != opSwap {
		q.mu.Unlock()
		t := time.NewTimer(delay)
		select {
		case <-t.C:
		case <-q.kick:
		}
		t.Stop()
		q.mu.Lock()
	}
	n := 0
	for n < len(q.ops) && n < max {
		if q.ops[n].kind == opSwap {
			if n == 0 {
				n = 1
			}
			break
		}
		n++
	}
	batch := make([]op, n)
	copy(batch, q.ops)
	rest := copy(q.ops, q.ops[n:])
	clear(q.ops[rest:])
	q.ops = q.ops[:rest]
	q.mu.Unlock()
	return batch, true
}

// progress counts the operations the writer has finished.
type progress struct {
	mu      sync.Mutex
	done    uint64
	changed chan struct{} // closed and replaced whenever done grows
}

func (p *progress) init() { p.changed = make(chan struct{}) }

func (p *progress) advance(n uint64) {
	p.mu.Lock()
	p.done += n
	close(p.changed)
	p.changed = make(chan struct{})
	p.mu.Unlock()
}

func (p *progress) wait(ctx context.Context, target uint64) error {
	for {
		p.mu.Lock()
		done, ch := p.done, p.changed
		p.mu.Unlock()
		if done >= target {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// Add queues memories for indexing and returns at once; see the queue-full policy above. A
// memory whose id is already indexed is replaced. An invalid memory (empty id, unknown kind)
// fails the whole call with ErrInvalidDoc before anything is queued; text is made valid
// UTF-8 and cut to Options.MaxTextBytes.
func (ix *Index) Add(docs ...Doc) error {
	ops := make([]op, len(docs))
	for i, d := range docs {
		d, err := clean(d, ix.opts.MaxTextBytes)
		if err != nil {
			return err
		}
		ops[i] = op{kind: opAdd, doc: d, dates: dateTerms(d.Text, d.Created)}
	}
	return ix.enqueue(ops)
}

// Delete queues the removal of memories by id, like Add.
func (ix *Index) Delete(ids ...string) error {
	ops := make([]op, 0, len(ids))
	for _, id := range ids {
		if id != "" {
			ops = append(ops, op{kind: opDelete, doc: Doc{ID: id}})
		}
	}
	return ix.enqueue(ops)
}

func (ix *Index) enqueue(ops []op) error {
	if len(ops) == 0 {
		return nil
	}
	q := &ix.q
	q.mu.Lock()
	if q.closed {
		q.mu.Unlock()
		return ErrClosed
	}
	if q.teeing {
		q.tee = append(q.tee, ops...)
	}
	if len(q.ops)+len(ops) > q.max {
		q.mu.Unlock()
		ix.dropped.Add(uint64(len(ops)))
		ix.lose(fmt.Sprintf("indexing queue full: %d memories dropped", len(ops)))
		return ErrQueueFull
	}
	q.ops = append(q.ops, ops...)
	q.enqueued += uint64(len(ops))
	full := len(q.ops) >= ix.opts.BatchSize
	q.mu.Unlock()
	signal(q.wake)
	if full {
		signal(q.kick)
	}
	return nil
}

// Flush waits until every memory queued before the call is searchable (and embedded, with an
// Embedder, or its embedding has failed).
func (ix *Index) Flush(ctx context.Context) error {
	q := &ix.q
	q.mu.Lock()
	target := q.enqueued
	q.flushers++
	q.mu.Unlock()
	signal(q.kick)
	defer func() {
		q.mu.Lock()
		q.flushers--
		q.mu.Unlock()
	}()
	return ix.prog.wait(ctx, target)
}

// writer is the one goroutine that writes to the live generation.
func (ix *Index) writer() {
	defer close(ix.writerDone)
	for {
		ops, ok := ix.q.next(ix.opts.BatchSize, ix.opts.BatchDelay)
		if !ok {
			return
		}
		if ops[0].kind == opSwap {
			ix.swap(ops[0].swap)
		} else if err := ix.writeOps(ix.live(), ops, nil); err != nil {
			ix.log.Error("memory: indexing failed", "memories", len(ops), "err", err)
			ix.lose(fmt.Sprintf("index write failed: %v", err))
		}
		ix.indexed.Add(uint64(len(ops)))
		ix.prog.advance(uint64(len(ops)))
	}
}

// writeOps applies ops to g: one Bleve batch, then the embeddings. Vectors are taken from
// reuse (the generation being replaced, during a rebuild) when the text is unchanged, so a
// rebuild does not embed everything again; reuse nil means g itself.
func (ix *Index) writeOps(g *generation, ops []op, reuse *generation) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("panic: %v", r)
		}
	}()
	b := g.idx.NewBatch()
	b.SetInternal([]byte(lengthsKey), g.lengths()) // as of the previous batch; close writes the last
	texts := make([]*document.TextField, 0, len(ops))
	var contexts []*document.TextField
	ids := make([]string, 0, len(ops))
	for _, o := range ops {
		ids = append(ids, o.doc.ID)
		switch o.kind {
		case opAdd:
			doc, text, prev, err := g.an.toDocument(o.doc, o.dates)
			if err != nil {
				ix.log.Warn("memory: skipping a memory", "id", o.doc.ID, "err", err)
				continue
			}
			if err := b.IndexAdvanced(doc); err != nil {
				return err
			}
			texts = append(texts, text)
			if prev != nil {
				contexts = append(contexts, prev)
			}
		case opDelete:
			b.Delete(o.doc.ID)
		}
	}
	// Dropped before the batch, so no search that starts while it goes in finds them in
	// the cache with their old fields, and again after it, for what a search that read
	// an older snapshot meanwhile put back (the version refuses most of those).
	g.hits.invalidate(ids)
	err = g.idx.Batch(b)
	g.hits.invalidate(ids)
	if err != nil {
		return err
	}
	var tokens int
	for _, f := range texts { // Batch analyzed them in place
		tokens += f.AnalyzedLength()
	}
	g.tokens.Add(int64(tokens))
	g.analyzed.Add(int64(len(texts)))
	tokens = 0
	for _, f := range contexts {
		tokens += f.AnalyzedLength()
	}
	g.ctxTokens.Add(int64(tokens))
	g.ctxAnalyzed.Add(int64(len(contexts)))
	if reuse == nil {
		reuse = g
	}
	return ix.writeVectors(g, ops, reuse)
}

// writeVectors embeds added memories and records deletions in g's vector file. Embedding
// failures are logged and counted, never returned: those memories are found by BM25 only.
func (ix *Index) writeVectors(g *generation, ops []op, reuse *generation) error {
	var recs []vecRecord
	var need []int
	var texts []string
	for _, o := range ops {
		id := o.doc.ID
		if o.kind == opDelete || ix.opts.Embedder == nil || o.doc.Text == "" {
			if g.vec.has(id) {
				recs = append(recs, vecRecord{id: id}) // deleted, or its vector is stale
			}
			continue
		}
		h := textHash(o.doc.Text)
		if v := reuse.vec.lookup(id, h); v != nil {
			if reuse != g {
				recs = append(recs, vecRecord{id: id, agent: o.doc.Agent, kind: o.doc.Kind, hash: h, vec: v})
			}
			continue
		}
		recs = append(recs, vecRecord{id: id, agent: o.doc.Agent, kind: o.doc.Kind, hash: h})
		need = append(need, len(recs)-1)
		texts = append(texts, o.doc.Text)
	}
	if len(texts) > 0 {
		ctx, cancel := context.WithTimeout(ix.embedCtx, ix.opts.EmbedTimeout)
		vecs, err := embedAll(ctx, ix.opts.Embedder, texts)
		cancel()
		if err != nil {
			ix.embedFailed("indexing", err)
		}
		for i, r := range need {
			if err == nil {
				recs[r].vec = vecs[i]
			} else if !g.vec.has(recs[r].id) {
				recs[r].id = "" // nothing to delete either
			}
		}
	}
	kept := recs[:0]
	for _, r := range recs {
		if r.id != "" {
			kept = append(kept, r)
		}
	}
	if len(kept) == 0 {
		return nil
	}
	return g.vec.write(kept)
}

// embedFailed logs an embedding failure at most every 30 seconds and counts it.
func (ix *Index) embedFailed(what string, err error) {
	ix.embedFailures.Add(1)
	now := time.Now().UnixNano()
	last := ix.lastWarn.Load()
	if now-last < int64(30*time.Second) || !ix.lastWarn.CompareAndSwap(last, now) {
		return
	}
	ix.log.Warn("memory: embedding failed; using BM25 alone", "during", what, "err", err,
		"failures", ix.embedFailures.Load())
}
