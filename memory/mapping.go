package memory

import (
	"fmt"
	"time"

	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/analysis"
	"github.com/blevesearch/bleve/v2/analysis/analyzer/custom"
	"github.com/blevesearch/bleve/v2/analysis/analyzer/keyword"
	"github.com/blevesearch/bleve/v2/analysis/lang/en"
	"github.com/blevesearch/bleve/v2/analysis/token/lowercase"
	"github.com/blevesearch/bleve/v2/analysis/tokenizer/whitespace"
	"github.com/blevesearch/bleve/v2/document"
	"github.com/blevesearch/bleve/v2/mapping"
	"github.com/blevesearch/bleve/v2/search"
	index "github.com/blevesearch/bleve_index_api"
)

// Index fields. The document id is Bleve's own _id.
const (
	fieldText    = "text"    // analyzed with the English analyzer (stop words, stemming)
	fieldAgent   = "agent"   // keyword; sharedTerm for shared memories
	fieldKind    = "kind"    // keyword
	fieldSource  = "source"  // keyword
	fieldCreated = "created" // datetime, stored only (see createdOptions)
	fieldSpeaker = "speaker" // who said it, English analyzer so names match the query's terms
	fieldContext = "context" // the previous turn, English analyzer, not stored, searched with a low boost
	fieldDates   = "dates"   // the memory's dates and the dates it mentions (see dates.go), whitespace-split, not stored
)

// datesAnalyzer splits the dates field on spaces and lowercases it: its terms ("2023-05-07",
// "2023-05", "may") are built by dates.go, not analyzed out of prose.
const datesAnalyzer = "agentd_dates"

// sharedTerm is what the agent field holds for a shared memory: an empty term is not safe in
// every segment format, and no agent name can contain NUL (clean rejects it).
const sharedTerm = "\x00"

// storedFields are loaded for every hit; nothing else is stored.
var storedFields = []string{fieldAgent, fieldKind, fieldText, fieldSource, fieldCreated, fieldSpeaker}

// Every field but the context and the dates is stored; none has term vectors (no
// highlighting), doc values (no sorting or faceting) or a place in the _all field: the
// index stays small and fast.
const fieldOptions = index.IndexField | index.StoreField

// createdOptions: created is stored, not indexed. Recency is a re-ranking of the top hits
// that reads the stored value; indexing a datetime adds 16 prefix-coded terms per memory, all
// but unique, which halved the ingest rate. Time-range queries would need it indexed (and a
// formatVersion bump).
const createdOptions = index.StoreField

// newMapping is the explicit index mapping: no dynamic fields, BM25 scoring.
func newMapping() *mapping.IndexMappingImpl {
	text := bleve.NewTextFieldMapping()
	text.Analyzer = en.AnalyzerName

	doc := bleve.NewDocumentStaticMapping()
	doc.AddFieldMappingsAt(fieldText, text)
	doc.AddFieldMappingsAt(fieldAgent, bleve.NewKeywordFieldMapping())
	doc.AddFieldMappingsAt(fieldKind, bleve.NewKeywordFieldMapping())
	doc.AddFieldMappingsAt(fieldSource, bleve.NewKeywordFieldMapping())
	doc.AddFieldMappingsAt(fieldCreated, bleve.NewDateTimeFieldMapping())
	speaker, context, dates := bleve.NewTextFieldMapping(), bleve.NewTextFieldMapping(), bleve.NewTextFieldMapping()
	speaker.Analyzer, context.Analyzer, dates.Analyzer = en.AnalyzerName, en.AnalyzerName, datesAnalyzer
	doc.AddFieldMappingsAt(fieldSpeaker, speaker)
	doc.AddFieldMappingsAt(fieldContext, context)
	doc.AddFieldMappingsAt(fieldDates, dates)
	for name, fms := range doc.Properties {
		for _, f := range fms.Fields {
			f.Store = name != fieldContext && name != fieldDates
			f.Index = name != fieldCreated
			f.IncludeTermVectors = false
			f.IncludeInAll = false
			f.DocValues = false
		}
	}

	m := bleve.NewIndexMapping()
	if err := m.AddCustomAnalyzer(datesAnalyzer, map[string]any{
		"type": custom.Name, "tokenizer": whitespace.Name, "token_filters": []any{lowercase.Name},
	}); err != nil {
		panic(err) // only if the names above are not registered: a build error in effect
	}
	m.DefaultMapping = doc
	m.DefaultAnalyzer = en.AnalyzerName
	m.DefaultField = fieldText
	m.IndexDynamic = false
	m.StoreDynamic = false
	m.DocValuesDynamic = false
	m.ScoringModel = index.BM25Scoring
	return m
}

// analyzers are resolved once from the mapping so documents and queries analyze alike.
type analyzers struct {
	text, keyword, dates analysis.Analyzer
}

func analyzersFor(m mapping.IndexMapping) (analyzers, error) {
	a := analyzers{text: m.AnalyzerNamed(en.AnalyzerName), keyword: m.AnalyzerNamed(keyword.Name), dates: m.AnalyzerNamed(datesAnalyzer)}
	if a.text == nil || a.keyword == nil || a.dates == nil {
		return a, fmt.Errorf("memory: analyzers %q/%q/%q not registered", en.AnalyzerName, keyword.Name, datesAnalyzer)
	}
	return a, nil
}

// toDocument builds the Bleve document for d directly, skipping the mapping's reflection walk;
// it produces the same fields the mapping would (a test checks that).
// It also returns the text and context fields, whose AnalyzedLength is known once Bleve has
// indexed them (prev, the context, is nil when the memory has none). dates is the dates
// field, dateTerms(d.Text, d.Created).
func (a analyzers) toDocument(d Doc, dates string) (doc *document.Document, text, prev *document.TextField, err error) {
	doc = document.NewDocument(d.ID)
	text = document.NewTextFieldCustom(fieldText, nil, []byte(d.Text), fieldOptions, a.text)
	doc.AddField(text)
	if d.Speaker != "" {
		doc.AddField(document.NewTextFieldCustom(fieldSpeaker, nil, []byte(d.Speaker), fieldOptions, a.text))
	}
	if d.Context != "" {
		prev = document.NewTextFieldCustom(fieldContext, nil, []byte(d.Context), index.IndexField, a.text)
		doc.AddField(prev)
	}
	if dates != "" {
		doc.AddField(document.NewTextFieldCustom(fieldDates, nil, []byte(dates), index.IndexField, a.dates))
	}
	doc.AddField(document.NewTextFieldCustom(fieldAgent, nil, []byte(agentTerm(d.Agent)), fieldOptions, a.keyword))
	doc.AddField(document.NewTextFieldCustom(fieldKind, nil, []byte(d.Kind), fieldOptions, a.keyword))
	if d.Source != "" {
		doc.AddField(document.NewTextFieldCustom(fieldSource, nil, []byte(d.Source), fieldOptions, a.keyword))
	}
	created, err := document.NewDateTimeFieldWithIndexingOptions(fieldCreated, nil, d.Created, time.RFC3339Nano, createdOptions)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("memory: %s: created: %w", d.ID, err)
	}
	doc.AddField(created)
	return doc, text, prev, nil
}

func agentTerm(agent string) string {
	if agent == "" {
		return sharedTerm
	}
	return agent
}

// hitFrom decodes a Bleve match whose stored fields were loaded.
func hitFrom(dm *search.DocumentMatch) Hit {
	h := Hit{ID: dm.ID, BM25: dm.Score, Score: dm.Score}
	str := func(f string) string { s, _ := dm.Fields[f].(string); return s }
	h.Agent = str(fieldAgent)
	if h.Agent == sharedTerm {
		h.Agent = ""
	}
	h.Kind = Kind(str(fieldKind))
	h.Text = str(fieldText)
	h.Source = str(fieldSource)
	h.Speaker = str(fieldSpeaker)
	if t, err := time.Parse(time.RFC3339Nano, str(fieldCreated)); err == nil {
		h.Created = t.UTC()
	}
	return h
}
