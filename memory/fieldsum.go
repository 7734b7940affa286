package memory

import (
	"context"

	"github.com/blevesearch/bleve/v2/mapping"
	"github.com/blevesearch/bleve/v2/search"
	index "github.com/blevesearch/bleve_index_api"
)

// fieldsTerm is one query word looked for in the text and, with their boosts, in the context
// and speaker fields (searchedFields). Its score is the sum of the fields' BM25 scores, like
// BM25F's sum over fields: a word found in both a memory and its context counts once in the
// disjunction's coordination factor, not as two of the query's words.
// in says which fields have the term (0: not known, search them all).
type fieldsTerm struct {
	term string
	in   fieldSet
}

func (q fieldsTerm) Searcher(ctx context.Context, i index.IndexReader, m mapping.IndexMapping, options search.SearcherOptions) (search.Searcher, error) {
	boosts := [len(searchedFields)]float64{1, contextBoost, speakerBoost} // searchedFields' order
	f := &fieldSum{}
	for n, field := range searchedFields {
		if q.in != 0 && q.in&(1<<n) == 0 {
			continue
		}
		s, err := boosted(termQuery(field, q.term), boosts[n]).Searcher(ctx, i, m, options)
		if err != nil {
			_ = f.Close()
			return nil, err
		}
		f.subs = append(f.subs, s)
	}
	f.curs = make([]*search.DocumentMatch, len(f.subs))
	return f, nil
}

// fieldSum merges its searchers' matches by document, summing their scores.
type fieldSum struct {
	subs    []search.Searcher
	curs    []*search.DocumentMatch // each sub's current match; nil once it is exhausted
	started bool
}

func (f *fieldSum) start(ctx *search.SearchContext) error {
	f.started = true
	for i, s := range f.subs {
		var err error
		if f.curs[i], err = s.Next(ctx); err != nil {
			return err
		}
	}
	return nil
}

func (f *fieldSum) Next(ctx *search.SearchContext) (*search.DocumentMatch, error) {
	if !f.started {
		if err := f.start(ctx); err != nil {
			return nil, err
		}
	}
	return f.emit(ctx)
}

func (f *fieldSum) Advance(ctx *search.SearchContext, id index.IndexInternalID) (*search.DocumentMatch, error) {
	if !f.started {
		if err := f.start(ctx); err != nil {
			return nil, err
		}
	}
	for i, c := range f.curs {
		if c == nil || c.IndexInternalID.Compare(id) >= 0 {
			continue
		}
		ctx.DocumentMatchPool.Put(c)
		var err error
		if f.curs[i], err = f.subs[i].Advance(ctx, id); err != nil {
			return nil, err
		}
	}
	return f.emit(ctx)
}

// emit returns the lowest current document with the scores of every sub on it summed, and
// moves those subs on.
func (f *fieldSum) emit(ctx *search.SearchContext) (*search.DocumentMatch, error) {
	var rv *search.DocumentMatch
	for _, c := range f.curs {
		if c != nil && (rv == nil || c.IndexInternalID.Compare(rv.IndexInternalID) < 0) {
			rv = c
		}
	}
	if rv == nil {
		return nil, nil
	}
	for i, c := range f.curs {
		if c == nil || !c.IndexInternalID.Equals(rv.IndexInternalID) {
			continue
		}
		if c != rv {
			rv.Score += c.Score
			ctx.DocumentMatchPool.Put(c)
		}
		var err error
		if f.curs[i], err = f.subs[i].Next(ctx); err != nil {
			return nil, err
		}
	}
	return rv, nil
}

func (f *fieldSum) Weight() float64 {
	var w float64
	for _, s := range f.subs {
		w += s.Weight()
	}
	return w
}

func (f *fieldSum) SetQueryNorm(n float64) {
	for _, s := range f.subs {
		s.SetQueryNorm(n)
	}
}

func (f *fieldSum) Count() uint64 {
	var n uint64
	for _, s := range f.subs {
		n += s.Count()
	}
	return n
}

func (f *fieldSum) Min() int { return 0 }

func (f *fieldSum) Size() int {
	n := 64
	for _, s := range f.subs {
		n += s.Size()
	}
	return n
}

func (f *fieldSum) DocumentMatchPoolSize() int {
	n := 1
	for _, s := range f.subs {
		n += s.DocumentMatchPoolSize()
	}
	return n
}

func (f *fieldSum) Close() error {
	var err error
	for _, s := range f.subs {
		if cerr := s.Close(); err == nil {
			err = cerr
		}
	}
	return err
}
