package cli

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"slices"
	"strings"

	"github.com/agentd/agentd/api"
	"github.com/agentd/agentd/internal/display"
)

// agentctl memory import and export: memories as JSONL, one record a line.

// maxImportLine bounds one line of an import file: a record's text is at most
// api.MaxTextBytes bytes, which JSON escaping can grow a few times.
const maxImportLine = 8 * api.MaxTextBytes

// maxBadLines is how many bad lines an import names before it counts the rest.
const maxBadLines = 5

// importLine is one record of an import file and the line it is on.
type importLine struct {
	line int
	rec  api.MemoryRecord
	size int
}

// scanImport reads the records of the import file at path in order, calling fn with
// each; a line that is not a record is passed with its error (rec zero). Blank lines are
// skipped. Its own errors name the file, and the line when there is one.
func scanImport(path string, fn func(l importLine, err error) error) error {
	fh, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("memory import: no file %s: give the path of a JSONL file (one JSON object a line)", path)
	}
	if err != nil {
		return fmt.Errorf("memory import: %w", err)
	}
	defer fh.Close()
	sc := bufio.NewScanner(fh)
	sc.Buffer(make([]byte, 64<<10), maxImportLine)
	n := 0
	for sc.Scan() {
		n++
		b := bytes.TrimSpace(sc.Bytes())
		if len(b) == 0 {
			continue
		}
		l := importLine{line: n, size: len(b)}
		if err := fn(l, decodeRecord(b, &l.rec)); err != nil {
			return err
		}
	}
	switch err := sc.Err(); {
	case errors.Is(err, bufio.ErrTooLong):
		return fmt.Errorf("%s:%d: the line is over %d bytes: a record's text is at most %d bytes; split it into several records", path, n+1, maxImportLine, api.MaxTextBytes)
	case err != nil:
		return fmt.Errorf("%s:%v", path, err)
	}
	return nil
}

// decodeRecord reads one line into rec, saying what is wrong and how to fix it.
func decodeRecord(b []byte, rec *api.MemoryRecord) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	err := dec.Decode(rec)
	if err == nil && dec.More() {
		err = errors.New("more than one JSON value")
	}
	var typeErr *json.UnmarshalTypeError
	switch {
	case err == nil:
		return rec.Check()
	case errors.As(err, &typeErr):
		return &api.RecordError{Field: typeErr.Field, Msg: fmt.Sprintf("a JSON %s where %s belongs: see agentctl memory --help for the fields", typeErr.Value, jsonType(typeErr.Field))}
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		field := strings.Trim(strings.TrimPrefix(err.Error(), "json: unknown field "), `"`)
		return &api.RecordError{Field: field, Msg: "not a record field: the fields are id, agent, kind, text, time, speaker, source, context and tags"}
	}
	return fmt.Errorf("not one JSON object (%v): write one object a line, like {\"text\": \"…\", \"time\": \"2023-05-08T13:56:00Z\"}", err)
}

func jsonType(field string) string {
	if field == "tags" {
		return "a list of strings"
	}
	return "a string"
}

// memoryImport checks the whole file first (nothing is sent if a line is bad or names an
// agent that does not exist), then sends it in batches, each stored all or none.
func (a memoryVerbs) memoryImport(ctx context.Context, f memoryFlags, rest []string) error {
	if len(rest) != 1 {
		return usagef("memory import takes one FILE.jsonl (one JSON object a line), got %d arguments", len(rest))
	}
	path := rest[0]
	agents, records, err := checkImportFile(path, f.agent)
	if err != nil {
		return err
	}
	if records == 0 {
		return fmt.Errorf("%s: no records: write one JSON object a line, like {\"text\": \"…\"}", path)
	}
	if err := a.checkImportAgents(ctx, path, agents); err != nil {
		return err
	}
	imported, err := a.sendImport(ctx, path, f.agent)
	return printResult(a.app, api.MemoryImportResult{Imported: imported}, err, func() {
		fmt.Fprintf(a.stdout, "imported %s from %s\n", display.Count(imported, "memory", "memories"), path)
	})
}

// checkImportFile reads the whole file, returning the agents its records name (with their
// first line) and how many records it has, or every bad line (up to maxBadLines).
func checkImportFile(path, defaultAgent string) (map[string]int, int, error) {
	agents := map[string]int{}
	var bad []string
	nbad, records := 0, 0
	err := scanImport(path, func(l importLine, err error) error {
		records++
		if err != nil {
			if nbad++; nbad <= maxBadLines {
				bad = append(bad, fmt.Sprintf("%s:%d: %v", path, l.line, err))
			}
			return nil
		}
		if ref := cmp.Or(strings.TrimSpace(l.rec.Agent), strings.TrimSpace(defaultAgent)); ref != "" {
			if _, ok := agents[ref]; !ok {
				agents[ref] = l.line
			}
		}
		return nil
	})
	if err != nil {
		return nil, 0, err
	}
	if nbad > 0 {
		if nbad > maxBadLines {
			bad = append(bad, fmt.Sprintf("…and %d more bad lines", nbad-maxBadLines))
		}
		return nil, 0, fmt.Errorf("%s: nothing imported: fix these lines and run the import again:\n%s", path, strings.Join(bad, "\n"))
	}
	return agents, records, nil
}

// checkImportAgents makes sure every agent the file names exists before anything is sent.
func (a memoryVerbs) checkImportAgents(ctx context.Context, path string, agents map[string]int) error {
	for _, n := range slices.Sorted(maps.Keys(agents)) {
		if _, err := api.AgentRoute.Do(ctx, a.api(), n, api.None{}); err != nil {
			if errors.Is(err, api.ErrNotFound) {
				return fmt.Errorf("%s:%d: no agent %q: nothing imported; create it first (agentctl create --name %s --role ROLE) or fix the agent", path, agents[n], n, n)
			}
			return err
		}
	}
	return nil
}

// sendImport sends the checked file in batches and returns how many records were stored.
// A batch the daemon refuses stores nothing; the batches before it are kept, and the error
// says so (importing the file again replaces them, it does not double them).
func (a memoryVerbs) sendImport(ctx context.Context, path, agent string) (int, error) {
	imported, lastLine := 0, 0
	req := api.MemoryImportRequest{Agent: agent}
	size := 0
	flush := func() error {
		if len(req.Records) == 0 {
			return nil
		}
		res, err := api.ImportMemoryRoute.Do(ctx, a.api(), "", req)
		if err != nil {
			if imported == 0 {
				return fmt.Errorf("%s: nothing imported: %w", path, err)
			}
			return fmt.Errorf("%s: lines up to %d were imported (%d memories), the rest was not: %w\nFix it and run the import again: memories already imported are replaced, not doubled", path, lastLine, imported, err)
		}
		imported += res.Imported
		lastLine = req.Lines[len(req.Lines)-1]
		req.Records, req.Lines, size = req.Records[:0], req.Lines[:0], 0
		return nil
	}
	err := scanImport(path, func(l importLine, err error) error {
		if err != nil {
			return fmt.Errorf("%s:%d: %w (the file changed during the import)", path, l.line, err)
		}
		if len(req.Records) == api.MemoryImportBatchMax || size+l.size > api.MemoryImportBatchBytes {
			if err := flush(); err != nil {
				return err
			}
		}
		req.Records, req.Lines = append(req.Records, l.rec), append(req.Lines, l.line)
		size += l.size
		return nil
	})
	if err == nil {
		err = flush()
	}
	return imported, err
}

// memoryExport writes memories to stdout as JSONL, page by page, as import reads them.
func (a memoryVerbs) memoryExport(ctx context.Context, f memoryFlags, rest []string) error {
	if len(rest) > 0 {
		return usagef("memory export takes no arguments, got %q: write it to a file with > FILE.jsonl", rest)
	}
	w := bufio.NewWriter(a.stdout)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	n := 0
	req := api.MemoryExportRequest{Agent: f.agent}
	for {
		page, err := api.ExportMemoryRoute.Do(ctx, a.api(), "", req)
		if err != nil {
			return agentErr(f.agent, err)
		}
		for _, r := range page.Records {
			if err := enc.Encode(r); err != nil {
				return err
			}
		}
		n += len(page.Records)
		if page.Next == "" {
			break
		}
		req.After = page.Next
	}
	if err := w.Flush(); err != nil {
		return err
	}
	a.note("exported %d memories", n)
	return nil
}
