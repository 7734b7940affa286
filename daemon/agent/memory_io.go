package agent

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/agentd/agentd/api"
	"github.com/agentd/agentd/daemon/store"
	"github.com/agentd/agentd/memory"
)

// The local API's bulk memory endpoints: agentctl memory import and export, and
// the per-agent part of memory stats.

// importQueueHigh is how many memories may wait for the index before an import waits for
// it: an import of 100,000 lines must not overflow the queue (which would drop memories and
// force a rebuild) while agents keep adding theirs.
const importQueueHigh = 16 << 10

// ImportMemory stores a batch of records in one transaction: every record is checked and
// its agent resolved first, and one bad record refuses the whole batch, naming its line.
func (s *memoryService) ImportMemory(ctx context.Context, req api.MemoryImportRequest) (*api.MemoryImportResult, error) {
	if s.mem == nil {
		return nil, errMemoryOff()
	}
	switch n := len(req.Records); {
	case n == 0:
		return nil, badRequest("no records to import: give one JSON object a line")
	case n > api.MemoryImportBatchMax:
		return nil, badRequest("%d records in one request, over %d: send the file in batches (agentctl memory import does)", n, api.MemoryImportBatchMax)
	}
	if len(req.Lines) != 0 && len(req.Lines) != len(req.Records) {
		return nil, badRequest("%d lines for %d records: give each record's line, or none", len(req.Lines), len(req.Records))
	}
	lineOf := func(i int) int {
		if len(req.Lines) > 0 {
			return req.Lines[i]
		}
		return i + 1
	}
	lineErr := func(i int, err error) error { return badRequest("line %d: %v", lineOf(i), err) }
	for i, r := range req.Records {
		if err := r.Check(); err != nil {
			return nil, lineErr(i, err)
		}
	}
	if st := s.mem.ix.Stats(); st.Queued > importQueueHigh {
		if err := s.mem.ix.Flush(ctx); err != nil {
			return nil, err
		}
	}
	err := s.st.Tx(ctx, func(tx *store.Tx) error {
		ids := map[string]string{} // agent ref → id
		resolveAgent := func(ref string) (string, error) {
			if id, ok := ids[ref]; ok {
				return id, nil
			}
			id, err := agentRef(tx, ref)
			ids[ref] = id
			return id, err
		}
		ms := make([]store.Memory, 0, len(req.Records))
		for i, r := range req.Records {
			m, err := importedMemory(tx, r, req.Agent, resolveAgent)
			if err != nil {
				return lineErr(i, err)
			}
			ms = append(ms, m)
		}
		if err := s.remember(tx, ms...); err != nil {
			return err
		}
		return tx.Audit("", "memory_imported", map[string]string{"memories": strconv.Itoa(len(ms)), "first_line": strconv.Itoa(lineOf(0))})
	})
	if err != nil {
		return nil, err
	}
	return &api.MemoryImportResult{Imported: len(req.Records)}, nil
}

// importedMemory is record r as a stored memory; defaultAgent owns it when r names none.
func importedMemory(tx *store.Tx, r api.MemoryRecord, defaultAgent string, resolveAgent func(string) (string, error)) (store.Memory, error) {
	ref := cmp.Or(strings.TrimSpace(r.Agent), strings.TrimSpace(defaultAgent))
	agentID, err := resolveAgent(ref)
	if err != nil {
		if errors.Is(err, api.ErrNotFound) {
			return store.Memory{}, &api.RecordError{Field: "agent", Msg: "no agent " + strconv.Quote(ref) + ": create it first (agentctl new " + ref + ") or fix the name"}
		}
		return store.Memory{}, err
	}
	when, _ := r.When() // checked
	m := store.Memory{ID: r.ID, AgentID: agentID, Kind: r.MemoryKind(), Text: cleanText(strings.TrimSpace(r.Text)),
		Source: cleanText(strings.TrimSpace(r.From())), Created: when, Tags: r.Tags,
		Speaker: cleanText(strings.TrimSpace(r.Speaker)), Context: cleanText(strings.TrimSpace(r.Context))}
	if m.ID == "" {
		// The same record imported again gets the same id: it replaces, never doubles.
		h := sha256.Sum256([]byte(agentID + "\x00" + m.Kind + "\x00" + when.Format(time.RFC3339Nano) + "\x00" + m.Source + "\x00" + m.Text))
		m.ID = "m-i-" + hex.EncodeToString(h[:10])
	}
	switch old, err := tx.Memory(m.ID); {
	case errors.Is(err, store.ErrNotFound):
	case err != nil:
		return m, err
	case old.AgentID != agentID:
		return m, &api.RecordError{Field: "id", Msg: strconv.Quote(m.ID) + " is another owner's memory: leave the id out to import it as a new memory"}
	case when.IsZero():
		m.Created = old.Created // a record without a time keeps the one it got first
	}
	return m, nil
}

// exportPage bounds ExportMemory's pages.
const (
	exportPageDefault = 1000
	exportPageMax     = 5000
)

// ExportMemory returns one page of memories, in id order, as import reads them back.
func (s *memoryService) ExportMemory(ctx context.Context, req api.MemoryExportRequest) (*api.MemoryExportPage, error) {
	if s.mem == nil {
		return nil, errMemoryOff()
	}
	if req.Limit < 0 || req.Limit > exportPageMax {
		return nil, badRequest("limit = %d: want 1 to %d (0 means %d)", req.Limit, exportPageMax, exportPageDefault)
	}
	limit := cmp.Or(req.Limit, exportPageDefault)
	out := &api.MemoryExportPage{Records: []api.MemoryRecord{}}
	err := s.st.View(ctx, func(tx *store.Tx) error {
		id, err := agentRef(tx, req.Agent)
		if err != nil {
			return err
		}
		var page []store.Memory
		if req.Agent != "" {
			page, err = tx.MemoryPageOf(id, req.After, limit)
		} else {
			page, err = tx.MemoryPage(req.After, limit)
		}
		if err != nil {
			return err
		}
		names, err := agentNames(tx)
		if err != nil {
			return err
		}
		for _, m := range page {
			out.Records = append(out.Records, exportRecord(m, names))
		}
		if len(page) == limit {
			out.Next = page[len(page)-1].ID
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// exportRecord is m as an export line: the agent by name (ids differ between daemons), its
// speaker (a record has a speaker or a source, so a speaker's memory leaves its source
// out: "slack message from Ana" is exported as speaker "Ana"), a chat memory without one
// giving its source as the speaker, as older exports did.
func exportRecord(m store.Memory, names map[string]string) api.MemoryRecord {
	r := api.MemoryRecord{ID: m.ID, Agent: cmp.Or(names[m.AgentID], m.AgentID), Kind: m.Kind, Text: m.Text,
		Time: m.Created.UTC().Format(time.RFC3339Nano), Tags: m.Tags, Context: m.Context}
	switch {
	case m.Speaker != "":
		r.Speaker = m.Speaker
	case m.Kind == string(memory.KindChat):
		r.Speaker = m.Source
	default:
		r.Source = m.Source
	}
	return r
}
