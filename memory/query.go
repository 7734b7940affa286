package memory

import (
	"context"
	"fmt"
	"math"
	"sort"

	"github.com/blevesearch/bleve/v2/analysis"
	"github.com/blevesearch/bleve/v2/mapping"
	"github.com/blevesearch/bleve/v2/search"
	"github.com/blevesearch/bleve/v2/search/query"
	"github.com/blevesearch/bleve/v2/search/searcher"
	index "github.com/blevesearch/bleve_index_api"
)

// maxQueryTerms caps the terms of one search; a longer query keeps its rarest terms, the
// ones that discriminate (and are cheap to search). Each is looked for in three fields, so
// a prompt's long query (the task and the latest steps) costs 48 term searches, not 72;
// LoCoMo's questions rank the same at 16 as at 24.
const maxQueryTerms = 16

// maxWideTerms caps the terms of the wide form, which runs when the fast form found
// nothing (see searchBM25): rarity is index-wide, so words only other agents' memories
// hold can crowd an agent's own out of maxQueryTerms.
const maxWideTerms = 64

// queryForm is how buildQuery builds a search: fast (terms common across the index only
// add to the scores of memories a rarer term found) or exhaustive (every term finds, in
// conjunction with the agent filter), keeping the terms rarest terms.
type queryForm struct {
	exhaustive bool
	terms      int
}

// The forms searchBM25 tries, in order, while a form found fewer than wanted and left out
// what could hide the agent's memories.
var (
	fastForm       = queryForm{terms: maxQueryTerms}
	wideForm       = queryForm{terms: maxWideTerms}
	exhaustiveForm = queryForm{exhaustive: true, terms: maxQueryTerms}
)

// pruning says what a fast form left out: terms past its cap (capped), or common terms
// that only add to scores or were dropped (common).
type pruning struct{ capped, common bool }

// Pruning (a search that finds fewer than wanted runs again without it; see searchBM25):
// a query term found in more than commonTermFraction of the memories, and in more than
// commonTermMinDocs, is common: it only adds to the score of memories that match a rarer
// term, it does not find memories by itself (the idea of Lucene's CommonTermsQuery). Its
// postings are long and its BM25 weight small, and walking them cost most of a search at 1M
// memories. A query made of common terms only finds the memories that have its two rarest
// terms together (one term alone: that term). Small indexes never have common terms.
// Variables so tests can lower them.
// allCommonFinders is how many of the rarest terms a query of common terms only requires
// together.
const allCommonFinders = 2

var (
	dropTermFraction          = 0.5 // a term in more of the memories is dropped from queries
	commonTermFraction        = 0.02
	commonTermMinDocs  uint64 = 1_000
)

// textQuery is the Bleve query for a search: memories matching any rare term (and the
// filter), scored by BM25 over all the terms. It is built by hand from Bleve's searchers so
// that
//   - the filter (agent, kinds) is searched without scoring and joins the conjunction with
//     zero weight: it changes neither the query norm nor any score, and the conjunction
//     leapfrogs between the rare terms and the filter instead of checking every match;
//   - common terms are only advanced to memories already found (commonBonus).
//
// The query norm covers all the terms whether or not there is a filter, so a memory scores
// the same with and without one.
type textQuery struct {
	rare, common []string
	// dates are terms of the dates field (see queryDates): they add to scores, never find.
	dates  []string
	in     map[string]fieldSet // the fields each term is in
	filter query.Query         // nil: none
	// all makes the rare terms a conjunction: a memory must have every one of them. Set
	// when even the rarest term is common (see buildQuery).
	all bool
}

// Weights of a query word found in the other fields than the text: a word of the previous
// turn is weaker evidence than one of the memory itself; the speaker counts like the text
// ("what did Ana say" is about Ana's own words). Chosen on the LoCoMo dev split:
// context 0.2–1 moves R@10 by about a point around 0.5; speaker 0.5 cost 1.5 points, 0 cost 8.
var (
	contextBoost = 0.5
	speakerBoost = 1.0
	datesBoost   = 0.5
)

func (q *textQuery) Searcher(ctx context.Context, i index.IndexReader, m mapping.IndexMapping, options search.SearcherOptions) (search.Searcher, error) {
	var finder query.Query = fieldsQuery(q.rare, q.in)
	if q.all {
		finder = allTermsQuery(q.rare, q.in)
	}
	rare, err := finder.Searcher(ctx, i, m, options)
	if err != nil {
		return nil, err
	}
	weight := rare.Weight()
	base := rare
	if q.filter != nil {
		f, err := q.filter.Searcher(ctx, i, m, search.SearcherOptions{Score: "none"})
		if err != nil {
			_ = rare.Close()
			return nil, err
		}
		if base, err = searcher.NewConjunctionSearcher(ctx, i, []search.Searcher{rare, unscored{f}}, options); err != nil {
			_ = rare.Close()
			_ = f.Close()
			return nil, err
		}
	}
	if len(q.common) == 0 && len(q.dates) == 0 {
		base.SetQueryNorm(1 / math.Sqrt(weight))
		return base, nil
	}
	bq := fieldsQuery(q.common, q.in)
	for _, t := range q.dates {
		bq.AddQuery(boosted(termQuery(fieldDates, t), datesBoost))
	}
	common, err := bq.Searcher(ctx, i, m, options)
	if err != nil {
		_ = base.Close()
		return nil, err
	}
	norm := 1 / math.Sqrt(weight+common.Weight())
	base.SetQueryNorm(norm)
	common.SetQueryNorm(norm)
	return &commonBonus{Searcher: base, bonus: common}, nil
}

// termsQuery is a disjunction of term queries — always a disjunction, even of one term, so
// scores do not depend on how many terms there are.
func termsQuery(field string, terms []string) *query.DisjunctionQuery {
	d := query.NewDisjunctionQuery(nil)
	for _, t := range terms {
		d.AddQuery(termQuery(field, t))
	}
	return d
}

// fieldsQuery is the disjunction of the terms, each looked for in every searched field
// (fieldsTerm): the coordination factor counts the query's words a memory has.
func fieldsQuery(terms []string, in map[string]fieldSet) *query.DisjunctionQuery {
	d := query.NewDisjunctionQuery(nil)
	for _, t := range terms {
		d.AddQuery(fieldsTerm{t, in[t]})
	}
	return d
}

// allTermsQuery is a conjunction of term queries: memories with every term (in any field).
func allTermsQuery(terms []string, in map[string]fieldSet) *query.ConjunctionQuery {
	c := query.NewConjunctionQuery(nil)
	for _, t := range terms {
		c.AddQuery(fieldsTerm{t, in[t]})
	}
	return c
}

func boosted(q *query.TermQuery, b float64) *query.TermQuery {
	q.SetBoost(b)
	return q
}

func termQuery(field, term string) *query.TermQuery {
	tq := query.NewTermQuery(term)
	tq.SetField(field)
	return tq
}

// buildQuery returns the query for q on an index of docs memories in the given form, or
// nil when the text has no term that any memory contains, and what a fast form left out
// that may hide the agent's memories (searchBM25 then tries the next form). dates are the
// dates-field terms the text asks about (see queryDates).
func buildQuery(ctx context.Context, g *generation, q Query, dates []string, docs uint64, form queryForm) (bq query.Query, p pruning, err error) {
	terms := queryTerms(g.an.text, q.Text)
	if len(terms) == 0 {
		return nil, p, nil
	}
	in := map[string]fieldSet{}
	df, err := g.termDocFreqs(ctx, terms, in)
	if err != nil {
		return nil, p, fmt.Errorf("memory: search: %w", err)
	}
	terms = byRarity(terms, df, len(terms))
	if len(terms) > form.terms {
		terms, p.capped = terms[:form.terms], true
	}
	if len(terms) == 0 {
		return nil, p, nil
	}
	tq := &textQuery{filter: filterQuery(q), dates: dates, in: in}
	if form.exhaustive {
		// Every term finds: with the agent filter in the conjunction this walks only the
		// memories the query may return.
		tq.rare = terms
		return tq, p, nil
	}
	all := len(terms)
	cutoff := max(commonTermMinDocs, uint64(commonTermFraction*float64(docs)))
	// A common term in more than half the memories scores next to nothing (its BM25
	// weight is about zero) yet costs a walk of its postings: it is left out, like a stop
	// word, unless the query has nothing else.
	for len(terms) > 1 && df[terms[len(terms)-1]] > max(uint64(dropTermFraction*float64(docs)), cutoff) {
		terms = terms[:len(terms)-1]
	}
	if df[terms[0]] > cutoff && len(terms) > 1 {
		// Every term is common: any one of them would find a large part of the index,
		// to be scored memory by memory, for a ranking that says little. Like Lucene's
		// CommonTermsQuery, find the memories that have the rarest ones together; the
		// rest add to their scores as usual.
		n := min(len(terms), allCommonFinders)
		tq.rare, tq.common, tq.all = terms[:n], terms[n:], true
		p.common = true
		return tq, p, nil
	}
	for i, t := range terms {
		if i > 0 && df[t] > cutoff {
			tq.common = append(tq.common, t)
		} else {
			tq.rare = append(tq.rare, t)
		}
	}
	p.common = len(tq.common) > 0 || len(terms) < all
	return tq, p, nil
}

// byRarity returns the terms found in at least one memory, rarest first, at most n.
func byRarity(terms []string, df map[string]uint64, n int) []string {
	kept := make([]string, 0, len(terms))
	for _, t := range terms {
		if df[t] > 0 {
			kept = append(kept, t)
		}
	}
	sort.SliceStable(kept, func(i, j int) bool { return df[kept[i]] < df[kept[j]] })
	if len(kept) > n {
		kept = kept[:n]
	}
	return kept
}

// filterQuery restricts a search to the agent's and shared memories and to q.Kinds; nil
// when there is nothing to restrict.
func filterQuery(q Query) query.Query {
	var filters []query.Query
	if !q.AllAgents {
		owners := []string{sharedTerm}
		if q.Agent != "" {
			owners = append(owners, q.Agent)
		}
		filters = append(filters, termsQuery(fieldAgent, owners))
	}
	if len(q.Kinds) > 0 {
		kinds := make([]string, len(q.Kinds))
		for i, k := range q.Kinds {
			kinds[i] = string(k)
		}
		filters = append(filters, termsQuery(fieldKind, kinds))
	}
	switch len(filters) {
	case 0:
		return nil
	case 1:
		return filters[0]
	}
	return query.NewConjunctionQuery(filters)
}

// queryTerms analyzes text like memory text and returns its distinct terms in order.
func queryTerms(a analysis.Analyzer, text string) []string {
	var terms []string
	seen := map[string]bool{}
	for _, tok := range a.Analyze([]byte(text)) {
		t := string(tok.Term)
		if !seen[t] {
			seen[t] = true
			terms = append(terms, t)
		}
	}
	return terms
}

// unscored wraps a filter searcher so a conjunction counts it with weight and score zero.
type unscored struct{ search.Searcher }

func (unscored) Weight() float64      { return 0 }
func (unscored) SetQueryNorm(float64) {}

func (u unscored) Next(ctx *search.SearchContext) (*search.DocumentMatch, error) {
	dm, err := u.Searcher.Next(ctx)
	if dm != nil {
		dm.Score = 0
	}
	return dm, err
}

func (u unscored) Advance(ctx *search.SearchContext, id index.IndexInternalID) (*search.DocumentMatch, error) {
	dm, err := u.Searcher.Advance(ctx, id)
	if dm != nil {
		dm.Score = 0
	}
	return dm, err
}

// commonBonus adds the common terms' score to each memory the embedded searcher finds,
// advancing the common terms only to those memories.
type commonBonus struct {
	search.Searcher // rare terms (and the filter): decides what matches
	bonus           search.Searcher
	cur             *search.DocumentMatch // bonus's position
	done            bool                  // bonus exhausted
}

func (c *commonBonus) Next(ctx *search.SearchContext) (*search.DocumentMatch, error) {
	dm, err := c.Searcher.Next(ctx)
	if err != nil || dm == nil {
		return dm, err
	}
	return dm, c.add(ctx, dm)
}

func (c *commonBonus) Advance(ctx *search.SearchContext, id index.IndexInternalID) (*search.DocumentMatch, error) {
	dm, err := c.Searcher.Advance(ctx, id)
	if err != nil || dm == nil {
		return dm, err
	}
	return dm, c.add(ctx, dm)
}

func (c *commonBonus) add(ctx *search.SearchContext, dm *search.DocumentMatch) error {
	if !c.done && (c.cur == nil || c.cur.IndexInternalID.Compare(dm.IndexInternalID) < 0) {
		if c.cur != nil {
			ctx.DocumentMatchPool.Put(c.cur)
		}
		var err error
		if c.cur, err = c.bonus.Advance(ctx, dm.IndexInternalID); err != nil {
			return err
		}
		c.done = c.cur == nil
	}
	if c.cur != nil && c.cur.IndexInternalID.Equals(dm.IndexInternalID) {
		dm.Score += c.cur.Score
	}
	return nil
}

func (c *commonBonus) Weight() float64 { return c.Searcher.Weight() + c.bonus.Weight() }

func (c *commonBonus) SetQueryNorm(n float64) {
	c.Searcher.SetQueryNorm(n)
	c.bonus.SetQueryNorm(n)
}

func (c *commonBonus) Size() int { return c.Searcher.Size() + c.bonus.Size() }

func (c *commonBonus) DocumentMatchPoolSize() int {
	return c.Searcher.DocumentMatchPoolSize() + c.bonus.DocumentMatchPoolSize() + 1
}

func (c *commonBonus) Close() error {
	err := c.Searcher.Close()
	if berr := c.bonus.Close(); err == nil {
		err = berr
	}
	return err
}
