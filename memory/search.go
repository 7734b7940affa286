package memory

import (
	"context"
	"fmt"
	"math"
	"sort"
	"time"

	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/search"
	"github.com/blevesearch/bleve/v2/search/query"
)

const (
	// maxQueryBytes caps the query text analyzed.
	maxQueryBytes = 8 << 10
	// rrfK is the reciprocal rank fusion constant: score = Σ 1/(rrfK + rank).
	rrfK = 60
)

// Search returns up to K memories matching q.Text, best first: the agent's own and shared
// ones (or everyone's with AllAgents), of q.Kinds if given. Scores are BM25; the agent and
// kind restrictions are filters that do not change them. With an Embedder, the BM25 and
// cosine rankings are fused by reciprocal rank fusion; if the query cannot be embedded the
// search is BM25 alone (and logs a warning). With q.HalfLife, the top candidates are
// re-ranked by score × recencyFactor: decay only breaks near-ties.
func (ix *Index) Search(ctx context.Context, q Query) ([]Hit, error) {
	k := q.K
	if k <= 0 {
		k = DefaultK
	}
	q.Text = sanitize(q.Text, maxQueryBytes)
	depth := k
	if q.HalfLife > 0 || ix.opts.Embedder != nil {
		depth = max(3*k, 30) // candidates to re-rank
	}
	// Embed before taking the lock: a slow model must not hold up a generation swap.
	qvec := ix.embedQuery(ctx, q.Text)

	ix.mu.RLock()
	defer ix.mu.RUnlock()
	if ix.closed {
		return nil, ErrClosed
	}
	g := ix.cur
	hits, err := ix.lexical(ctx, g, q, depth)
	if err != nil {
		return nil, err
	}
	if qvec != nil {
		if hits, err = ix.fuse(ctx, g, q, qvec, hits, depth); err != nil {
			return nil, err
		}
	}
	if q.HalfLife > 0 {
		now := ix.opts.Now()
		for i := range hits {
			hits[i].Score *= recencyFactor(now.Sub(hits[i].Created), q.HalfLife)
		}
	}
	sortHits(hits)
	if len(hits) > k {
		hits = hits[:k]
	}
	return hits, nil
}

// recencyTieWeight bounds what recency can add to a score: 1%. Decay by age only breaks
// near-ties; a fact that still matches better is never buried by being old (a
// 720h half-life used to cut LoCoMo R@10 from 65 to 39).
const recencyTieWeight = 0.01

// recencyFactor is the score multiplier for a memory of the given age: from 1+recencyTieWeight
// when new down to 1, halving its bonus every halfLife.
func recencyFactor(age, halfLife time.Duration) float64 {
	return 1 + recencyTieWeight*math.Exp2(-max(age, 0).Seconds()/halfLife.Seconds())
}

func sortHits(hits []Hit) {
	sort.SliceStable(hits, func(i, j int) bool {
		if hits[i].Score != hits[j].Score {
			return hits[i].Score > hits[j].Score
		}
		if !hits[i].Created.Equal(hits[j].Created) {
			return hits[i].Created.After(hits[j].Created)
		}
		return hits[i].ID < hits[j].ID
	})
}

// lexical is the BM25 side of a search: the question's words in the text, context and
// speaker fields and its dates in the dates field. (A second pass with the rarest words of
// the top hits, pseudo-relevance feedback, cost LoCoMo R@10 2–3 points: not done.)
func (ix *Index) lexical(ctx context.Context, g *generation, q Query, depth int) ([]Hit, error) {
	return ix.searchBM25(ctx, g, q, queryDates(q.Text, ix.opts.Now()), depth)
}

// searchBM25 runs the Bleve side. A panic inside Bleve means a damaged index: the search
// fails and the index is flagged for a rebuild.
func (ix *Index) searchBM25(ctx context.Context, g *generation, q Query, dates []string, depth int) (hits []Hit, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("memory: search failed, index damaged: %v", r)
			ix.lose(err.Error())
		}
	}()
	docs, err := g.idx.DocCount()
	if err != nil {
		return nil, fmt.Errorf("memory: search: %w", err)
	}
	// No starvation: the fast form keeps the query's rarest terms (rarity is
	// index-wide) and lets terms common across the index find only together with rarer
	// ones (see buildQuery), so other agents' memories could hide this agent's. When it
	// finds nothing and left terms out past its cap, the wide form runs with more of them
	// (slower: a prompt's long query often finds a few and stays on the fast form); when
	// it finds fewer than wanted and held common terms back, the exhaustive form runs:
	// every term finds, in conjunction with the agent filter, which bounds the walk to the
	// memories the search may return. Exhaustive is 2× slower at 1M memories, and far more
	// with many terms: it keeps the fast form's count. A search of every agent's memories
	// walks the whole index when exhaustive: it only falls back when it would come back
	// empty.
	enough := func(hits []Hit) bool { return len(hits) >= depth || (q.AllAgents && len(hits) > 0) }
	hits, p, err := ix.searchForm(ctx, g, q, dates, docs, depth, fastForm)
	if err != nil || enough(hits) {
		return hits, err
	}
	if p.capped && len(hits) == 0 {
		if hits, p, err = ix.searchForm(ctx, g, q, dates, docs, depth, wideForm); err != nil || enough(hits) {
			return hits, err
		}
	}
	if !p.common {
		return hits, nil
	}
	ex, _, err := ix.searchForm(ctx, g, q, dates, docs, depth, exhaustiveForm)
	if err != nil || len(ex) < len(hits) { // the wide form found more than 16 terms can
		return hits, err
	}
	return ex, nil
}

// searchForm runs q in one form for the top depth hits.
func (ix *Index) searchForm(ctx context.Context, g *generation, q Query, dates []string, docs uint64, depth int, form queryForm) ([]Hit, pruning, error) {
	if form != fastForm {
		ix.slowForms.Add(1)
	}
	bq, p, err := buildQuery(ctx, g, q, dates, docs, form)
	if err != nil || bq == nil {
		return nil, p, err
	}
	hits, err := ix.runBM25(ctx, g, bq, docs, depth)
	return hits, p, err
}

// runBM25 runs one Bleve query for the top depth hits. Their stored fields come from the
// generation's hit cache, and only the ones it lacks from the index.
func (ix *Index) runBM25(ctx context.Context, g *generation, bq query.Query, docs uint64, depth int) ([]Hit, error) {
	version := g.hits.begin()
	req := bleve.NewSearchRequestOptions(bq, depth, 0, false)
	if st := g.bm25Stats(docs); st != nil {
		req.PreSearchData = map[string]any{search.BM25PreSearchDataKey: st}
	}
	res, err := g.idx.SearchInContext(ctx, req)
	if err != nil {
		return nil, fmt.Errorf("memory: search: %w", err)
	}
	hits := make([]Hit, 0, len(res.Hits))
	var missing []string
	for _, dm := range res.Hits {
		h, ok := g.hits.get(dm.ID)
		if !ok {
			missing = append(missing, dm.ID)
		}
		h.ID, h.BM25, h.Score = dm.ID, dm.Score, dm.Score
		hits = append(hits, h)
	}
	if len(missing) == 0 {
		return hits, nil
	}
	loaded, err := ix.load(ctx, g, missing)
	if err != nil {
		return nil, err
	}
	for id, l := range loaded { // the analysis Fit makes of these is the cache's too
		l.an = &fitText{}
		loaded[id] = l
	}
	g.hits.put(loaded, version)
	out := hits[:0]
	for _, h := range hits {
		if l, ok := loaded[h.ID]; ok {
			l.BM25, l.Score = h.BM25, h.Score
			h = l
		} else if h.Kind == "" {
			continue // deleted since it was found
		}
		out = append(out, h)
	}
	return out, nil
}

// embedQuery embeds the query text, or returns nil (BM25 alone) without an Embedder or when
// embedding fails.
func (ix *Index) embedQuery(ctx context.Context, text string) []float32 {
	if ix.opts.Embedder == nil || text == "" {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, ix.opts.QueryEmbedTimeout)
	defer cancel()
	vecs, err := embedAll(ctx, ix.opts.Embedder, []string{text})
	if err != nil {
		ix.embedFailed("search", err)
		return nil
	}
	return vecs[0]
}

// fuse merges the BM25 hits with the vector side by reciprocal rank fusion; Score becomes the
// fused score. Memories found only by the vector side are loaded from the index.
func (ix *Index) fuse(ctx context.Context, g *generation, q Query, qvec []float32, bm []Hit, depth int) ([]Hit, error) {
	var agents []string
	if !q.AllAgents {
		agents = []string{""}
		if q.Agent != "" {
			agents = append(agents, q.Agent)
		}
	}
	var kinds map[Kind]bool
	if len(q.Kinds) > 0 {
		kinds = map[Kind]bool{}
		for _, kd := range q.Kinds {
			kinds[kd] = true
		}
	}
	vh, err := g.vec.search(ctx, qvec, agents, kinds, depth)
	if err != nil {
		return nil, err
	}
	byID := make(map[string]int, len(bm)+len(vh))
	for r := range bm {
		bm[r].Score = 1.0 / float64(rrfK+r+1)
		byID[bm[r].ID] = r
	}
	var missing []string
	for r, v := range vh {
		if i, ok := byID[v.id]; ok {
			bm[i].Score += 1.0 / float64(rrfK+r+1)
			bm[i].Similarity = v.sim
		} else {
			missing = append(missing, v.id)
		}
	}
	extra, err := ix.load(ctx, g, missing)
	if err != nil {
		return nil, err
	}
	for r, v := range vh {
		if h, ok := extra[v.id]; ok {
			h.BM25, h.Similarity, h.Score = 0, v.sim, 1.0/float64(rrfK+r+1)
			bm = append(bm, h)
		}
	}
	return bm, nil
}

// load fetches stored memories by id (ids missing from the index are left out).
func (ix *Index) load(ctx context.Context, g *generation, ids []string) (out map[string]Hit, err error) {
	if len(ids) == 0 {
		return nil, nil
	}
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("memory: load failed, index damaged: %v", r)
			ix.lose(err.Error())
		}
	}()
	req := bleve.NewSearchRequestOptions(query.NewDocIDQuery(ids), len(ids), 0, false)
	req.Fields = storedFields
	res, err := g.idx.SearchInContext(ctx, req)
	if err != nil {
		return nil, fmt.Errorf("memory: search: %w", err)
	}
	out = make(map[string]Hit, len(res.Hits))
	for _, dm := range res.Hits {
		out[dm.ID] = hitFrom(dm)
	}
	return out, nil
}
