package api

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Bulk import and export of memories: `agentctl memory import FILE.jsonl` and
// `agentctl memory export > FILE.jsonl`, one MemoryRecord a line. What export writes,
// import reads back unchanged, ids included, so importing an export twice changes nothing.

// MemoryRecord is one memory as a JSONL line of an import or export.
type MemoryRecord struct {
	// ID keeps a memory's identity across export and import; without one, import derives
	// it from the record's agent, time, source and text, so importing a file again
	// replaces its memories instead of doubling them.
	ID string `json:"id,omitempty"`
	// Agent (name or id) owns the memory; empty: the import's --agent, else shared.
	Agent string `json:"agent,omitempty"`
	// Kind is one of MemoryKinds; empty: chat when Speaker is set, else note.
	Kind string `json:"kind,omitempty"`
	// Text is what is remembered: at most MaxTextBytes bytes.
	Text string `json:"text"`
	// Time is when it happened, RFC 3339 ("2023-05-08T13:56:00Z"); empty: the import's time.
	// Relative words in the text ("yesterday") are read against it.
	Time string `json:"time,omitempty"`
	// Speaker is who said it (a chat turn); Source where it came from otherwise. A record
	// has one or the other: a speaker is also kept as the memory's source.
	Speaker string `json:"speaker,omitempty"`
	Source  string `json:"source,omitempty"`
	// Context is the turn just before this one in the same conversation (at most
	// MaxTextBytes): its end is searched beside the text, so a short answer is found by
	// its question's words.
	Context string `json:"context,omitempty"`
	// Tags label the memory (at most 16, each at most 64 bytes).
	Tags []string `json:"tags,omitempty"`
}

// MemoryImportBatchMax bounds one import request: records and encoded bytes. agentctl
// sends a file in batches within both (a request body is at most 1 MiB).
const (
	MemoryImportBatchMax   = 1000
	MemoryImportBatchBytes = 768 << 10
)

// MemoryImportRequest stores a batch of records in one transaction: every record is
// checked first, and if one is refused none is stored.
type MemoryImportRequest struct {
	// Agent (name or id) owns the records that name none; empty leaves them shared.
	Agent   string         `json:"agent,omitempty"`
	Records []MemoryRecord `json:"records"`
	// Lines are the file lines the records are on, so errors name the line to fix;
	// without them records count from line 1.
	Lines []int `json:"lines,omitempty"`
}

// MemoryImportResult says what a batch stored.
type MemoryImportResult struct {
	// Imported counts the records stored (new or replacing the memory of the same id).
	Imported int `json:"imported"`
}

// MemoryExportRequest asks for one page of an export, in id order.
type MemoryExportRequest struct {
	// Agent (name or id): its own memories only; empty: every memory, shared ones included.
	Agent string `query:"agent"`
	// After is the Next of the previous page; empty for the first.
	After string `query:"after"`
	// Limit is the page size: 0 means 1000, at most 5000.
	Limit int `query:"limit"`
}

// MemoryExportPage is one page of an export.
type MemoryExportPage struct {
	Records []MemoryRecord `json:"records"`
	// Next is the After of the next page; empty on the last one.
	Next string `json:"next,omitempty"`
}

// MemoryAgentStats describes one agent's memories (the shared ones have no agent).
type MemoryAgentStats struct {
	AgentID string `json:"agent_id,omitempty"`
	Agent   string `json:"agent,omitempty"`
	Count   int    `json:"count"`
	// Bytes is the size of their text.
	Bytes  int64     `json:"bytes"`
	Oldest time.Time `json:"oldest"`
	Newest time.Time `json:"newest"`
	// Kinds counts them by kind.
	Kinds map[string]int `json:"kinds"`
}

// MemoryMatch says why a search result matched.
type MemoryMatch struct {
	// Words are the memory's own words that matched the query's (stemmed alike:
	// "planning" matches "plans"), in the order they first appear.
	Words []string `json:"words,omitempty"`
	// Fields are where they matched: text, source, speaker; or context alone when the
	// memory was found by the words of the turn before it.
	Fields []string `json:"fields,omitempty"`
	// Date is the memory's day, given when the query asks about time ("when", a month, a
	// year, "last week"…): the day its relative words are read against.
	Date string `json:"date,omitempty"`
	// Similar is set when the embedding model found it close in meaning (no shared word
	// needed).
	Similar bool `json:"similar,omitempty"`
}

var (
	ImportMemoryRoute = register(Route[MemoryImportRequest, *MemoryImportResult]{Method: "POST", Path: "/v0/memory/import",
		Call: byRequest(Service.ImportMemory)})
	ExportMemoryRoute = register(Route[MemoryExportRequest, *MemoryExportPage]{Method: "GET", Path: "/v0/memory/export",
		Call: byRequest(Service.ExportMemory)})
)

// Bounds of a MemoryRecord besides its text (MaxTextBytes).
const (
	maxRecordRef  = 256  // id, agent
	maxRecordFrom = 1024 // speaker, source
	maxRecordTags = 16
	maxRecordTag  = 64
)

// RecordError is what is wrong with one record: the field and the fix. The daemon and
// agentctl add the line it is on.
type RecordError struct {
	Field string
	Msg   string
}

func (e *RecordError) Error() string { return "field " + strconv.Quote(e.Field) + ": " + e.Msg }

// Check reports what keeps r from being imported, as a *RecordError; nil when it can be.
// agentctl checks a whole file with it before sending anything; the daemon checks again.
func (r MemoryRecord) Check() error {
	bad := func(field, format string, args ...any) error {
		return &RecordError{Field: field, Msg: fmt.Sprintf(format, args...)}
	}
	switch {
	case strings.TrimSpace(r.Text) == "":
		return bad("text", "missing or empty: give the text to remember")
	case len(r.Text) > MaxTextBytes:
		return bad("text", "%d bytes, over %d: split it into several records", len(r.Text), MaxTextBytes)
	case r.Kind != "" && !slices.Contains(MemoryKinds, r.Kind):
		return bad("kind", "%q is not a kind: use one of %s, or leave it out", r.Kind, strings.Join(MemoryKinds, ", "))
	case len(r.ID) > maxRecordRef:
		return bad("id", "%d bytes, over %d: shorten it or leave it out", len(r.ID), maxRecordRef)
	case len(r.Agent) > maxRecordRef:
		return bad("agent", "%d bytes, over %d: give the agent's name or id", len(r.Agent), maxRecordRef)
	case r.Speaker != "" && r.Source != "" && r.Speaker != r.Source:
		return bad("speaker", "the record has both speaker %q and source %q: keep one (a memory has one source)", r.Speaker, r.Source)
	case len(r.Speaker) > maxRecordFrom:
		return bad("speaker", "%d bytes, over %d: shorten it", len(r.Speaker), maxRecordFrom)
	case len(r.Source) > maxRecordFrom:
		return bad("source", "%d bytes, over %d: shorten it", len(r.Source), maxRecordFrom)
	case strings.ContainsAny(r.Speaker, "\r\n") || strings.ContainsAny(r.Source, "\r\n"):
		// a memory's source is quoted before its text: a second line would read as a turn of its own
		return bad("source", "speaker and source are one line each: drop the line breaks")
	case len(r.Context) > MaxTextBytes:
		return bad("context", "%d bytes, over %d: keep the end of the turn before", len(r.Context), MaxTextBytes)
	case len(r.Tags) > maxRecordTags:
		return bad("tags", "%d tags, over %d: keep the %d that matter", len(r.Tags), maxRecordTags, maxRecordTags)
	}
	for _, tag := range r.Tags {
		if strings.TrimSpace(tag) == "" || len(tag) > maxRecordTag || strings.ContainsAny(tag, "\r\n") {
			return bad("tags", "tag %q: want one line of 1 to %d bytes", tag, maxRecordTag)
		}
	}
	if _, err := r.When(); err != nil {
		return err
	}
	return nil
}

// When is the record's time; zero when it has none.
func (r MemoryRecord) When() (time.Time, error) {
	if r.Time == "" {
		return time.Time{}, nil
	}
	t, err := time.Parse(time.RFC3339Nano, r.Time)
	if err != nil {
		return time.Time{}, &RecordError{Field: "time", Msg: fmt.Sprintf("%q is not an RFC 3339 time: write it like 2023-05-08T13:56:00Z (or +02:00 for a zone)", r.Time)}
	}
	return t.UTC(), nil
}

// From is the memory's source: the speaker or the source, whichever the record has.
func (r MemoryRecord) From() string { return cmp.Or(r.Speaker, r.Source) }

// MemoryKind is the kind r is stored as: its own, else chat for a speaker's words, else note.
func (r MemoryRecord) MemoryKind() string {
	switch {
	case r.Kind != "":
		return r.Kind
	case r.Speaker != "":
		return "chat"
	}
	return "note"
}
