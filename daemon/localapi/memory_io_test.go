package localapi

import (
	"context"
	"net/http"
	"reflect"
	"strings"
	"testing"

	"github.com/agentd/agentd/api"
)

// The fake's import and export, like the daemon's: a batch is checked whole and stored
// all or none; export pages in id order.

func (f *fakeService) importMemoryRoute(ctx context.Context, _ string, req api.MemoryImportRequest) (*api.MemoryImportResult, error) {
	if len(req.Records) == 0 {
		return nil, api.Errorf(api.ErrBadRequest, "no records to import: give one JSON object a line")
	}
	var add []api.Memory
	for i, r := range req.Records {
		if err := r.Check(); err != nil {
			return nil, api.Errorf(api.ErrBadRequest, "line %d: %v", i+1, err)
		}
		m := api.Memory{ID: r.ID, Kind: r.MemoryKind(), Text: r.Text, Source: r.From(), Tags: r.Tags, CreatedAt: t0}
		if ref := r.Agent; ref != "" || req.Agent != "" {
			if ref == "" {
				ref = req.Agent
			}
			f.mu.Lock()
			a, err := f.resolve(ref)
			f.mu.Unlock()
			if err != nil {
				return nil, api.Errorf(api.ErrBadRequest, "line %d: field \"agent\": no agent %q", i+1, ref)
			}
			m.AgentID, m.Agent = a.ID, a.Name
		}
		add = append(add, m)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.memories = append(f.memories, add...)
	return &api.MemoryImportResult{Imported: len(add)}, nil
}

func (f *fakeService) exportMemoryRoute(ctx context.Context, _ string, req api.MemoryExportRequest) (*api.MemoryExportPage, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if req.Limit <= 0 {
		req.Limit = 1000
	}
	page := &api.MemoryExportPage{Records: []api.MemoryRecord{}}
	for _, m := range f.memories { // ids are imported in order in these tests
		if m.ID <= req.After || (req.Agent != "" && m.Agent != req.Agent) {
			continue
		}
		if len(page.Records) == req.Limit {
			break
		}
		page.Records = append(page.Records, api.MemoryRecord{ID: m.ID, Agent: m.Agent, Kind: m.Kind, Text: m.Text, Source: m.Source, Tags: m.Tags})
	}
	if len(page.Records) == req.Limit {
		page.Next = page.Records[len(page.Records)-1].ID
	}
	return page, nil
}

// Import and export travel through the route table: the batch in the body, the export's
// agent, cursor and page size in the query string.
func TestMemoryImportExportRoutes(t *testing.T) {
	sock, _ := serve(t, newFake())
	c := &api.Client{Socket: sock}
	ctx := t.Context()
	recs := []api.MemoryRecord{
		{ID: "m-a", Text: "one", Speaker: "Ann", Tags: []string{"x"}},
		{ID: "m-b", Text: "two", Agent: "writer"},
		{ID: "m-c", Text: "three", Source: "notes"},
	}
	res, err := c.Memory().Import(ctx, api.MemoryImportRequest{Agent: "writer", Records: recs, Lines: []int{1, 2, 4}})
	if err != nil || res.Imported != 3 {
		t.Fatalf("import = %+v, %v", res, err)
	}
	_, err = c.Memory().Import(ctx, api.MemoryImportRequest{Records: []api.MemoryRecord{{Text: "ok"}, {Text: "x", Time: "May"}}})
	if err == nil || !strings.Contains(err.Error(), `line 2: field "time"`) {
		t.Errorf("bad batch: %v, want the line and field named", err)
	}
	page, err := c.Memory().Export(ctx, api.MemoryExportRequest{Agent: "writer", Limit: 2})
	if err != nil || len(page.Records) != 2 || page.Next != "m-b" {
		t.Fatalf("first page = %+v, %v", page, err)
	}
	page, err = c.Memory().Export(ctx, api.MemoryExportRequest{Agent: "writer", After: page.Next, Limit: 2})
	want := []api.MemoryRecord{{ID: "m-c", Agent: "writer", Kind: "note", Text: "three", Source: "notes"}}
	if err != nil || !reflect.DeepEqual(page.Records, want) || page.Next != "" {
		t.Fatalf("last page = %+v, %v; want %+v", page, err, want)
	}
	status, _, body := rawDo(t, sock, "GET", "/v0/memory/export?limit=many", nil, "")
	if status != http.StatusBadRequest || !strings.Contains(body, `limit=\"many\": want a whole number`) {
		t.Errorf("GET /v0/memory/export?limit=many = %d %s", status, body)
	}
	status, _, body = rawDo(t, sock, "POST", "/v0/memory/import", nil, `{"records":[{"text":"x","txt":"y"}]}`)
	if status != http.StatusBadRequest || !strings.Contains(body, `unknown field \"txt\"`) {
		t.Errorf("import with an unknown field = %d %s", status, body)
	}
}
