package agent

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/agentd/agentd/api"
)

// exportAll pages through the whole export, as agentctl memory export does.
func exportAll(t *testing.T, s *memoryService, agent string) []api.MemoryRecord {
	t.Helper()
	var out []api.MemoryRecord
	req := api.MemoryExportRequest{Agent: agent, Limit: 2}
	for {
		page, err := s.ExportMemory(context.Background(), req)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, page.Records...)
		if page.Next == "" {
			return out
		}
		req.After = page.Next
	}
}

var importRecords = []api.MemoryRecord{
	{Text: "Rosa: I went to the pottery class yesterday.", Speaker: "Rosa", Time: "2023-05-08T13:56:00Z", Tags: []string{"pottery", "class"},
		Context: "Teo: how was your week?"},
	{Text: "The launch is planned for March.", Source: "kickoff notes", Time: "2023-05-09T10:00:00+02:00"},
	{Text: "Shared: the office closes at six.", Agent: "", Kind: "note"},
	{ID: "m-keep", Agent: "bob", Kind: "feedback", Text: "Bob likes short answers.", Time: "2023-06-01T08:00:00Z"},
	{Text: "  padded text is trimmed  ", Time: "2023-06-02T08:00:00Z"},
}

// Export, then import into a fresh daemon with the same agents, gives the same memories:
// ids, owners, kinds, texts, times, speakers, sources, contexts and tags. Importing again doubles nothing.
func TestMemoryImportExportRoundTrip(t *testing.T) {
	ctx := context.Background()
	first := newHarness(t, withMemory(t))
	for _, n := range []string{"ann", "bob"} {
		first.create(api.CreateAgentRequest{Name: n, Description: "d", Goals: []string{"g"}, Start: new(bool)})
	}
	recs := importRecords
	recs[2].Agent = "" // shared; the others go to --agent ann unless they name bob
	res, err := first.sup.memoryService.ImportMemory(ctx, api.MemoryImportRequest{Agent: "ann", Records: recs})
	if err != nil || res.Imported != len(recs) {
		t.Fatalf("import = %+v, %v", res, err)
	}
	exported := exportAll(t, first.sup.memoryService, "")
	if len(exported) != len(recs) {
		t.Fatalf("exported %d records, want %d: %+v", len(exported), len(recs), exported)
	}
	if _, err := first.sup.memoryService.ImportMemory(ctx, api.MemoryImportRequest{Agent: "ann", Records: recs}); err != nil {
		t.Fatal(err)
	}
	if again := exportAll(t, first.sup.memoryService, ""); !reflect.DeepEqual(again, exported) {
		t.Errorf("importing the same file again changed the memories:\n%+v\nwant\n%+v", again, exported)
	}
	byText := map[string]api.MemoryRecord{}
	for _, r := range exported {
		byText[r.Text] = r
	}
	if r := byText["Rosa: I went to the pottery class yesterday."]; r.Agent != "ann" || r.Kind != "chat" || r.Speaker != "Rosa" ||
		r.Context != "Teo: how was your week?" || r.Time != "2023-05-08T13:56:00Z" || !reflect.DeepEqual(r.Tags, []string{"pottery", "class"}) {
		t.Errorf("chat record exported as %+v", r)
	}
	if r := byText["The launch is planned for March."]; r.Kind != "note" || r.Source != "kickoff notes" || r.Time != "2023-05-09T08:00:00Z" {
		t.Errorf("note record exported as %+v (time in UTC)", r)
	}
	if r := byText["Shared: the office closes at six."]; r.Agent != "ann" {
		t.Errorf("a record without agent takes the import's agent; got %+v", r)
	}
	if r := byText["Bob likes short answers."]; r.ID != "m-keep" || r.Agent != "bob" || r.Kind != "feedback" {
		t.Errorf("record with id and agent exported as %+v", r)
	}
	if _, ok := byText["padded text is trimmed"]; !ok {
		t.Errorf("padded text not trimmed: %+v", exported)
	}
	if bob := exportAll(t, first.sup.memoryService, "bob"); len(bob) != 1 || bob[0].ID != "m-keep" {
		t.Errorf("export --agent bob = %+v, want its one memory", bob)
	}

	fresh := newHarness(t, withMemory(t))
	for _, n := range []string{"bob", "ann"} { // other ids than in the first daemon
		fresh.create(api.CreateAgentRequest{Name: n, Description: "d", Goals: []string{"g"}, Start: new(bool)})
	}
	if _, err := fresh.sup.memoryService.ImportMemory(ctx, api.MemoryImportRequest{Records: exported}); err != nil {
		t.Fatal(err)
	}
	if got := exportAll(t, fresh.sup.memoryService, ""); !reflect.DeepEqual(got, exported) {
		t.Errorf("round trip changed the memories:\n%+v\nwant\n%+v", got, exported)
	}
	flush(t, fresh.opt.Memory.Index)
	hits, err := fresh.sup.memoryService.SearchMemory(ctx, api.MemorySearchRequest{Agent: "ann", Query: "when did Rosa go to the pottery class"})
	if err != nil || len(hits) == 0 {
		t.Fatalf("search after import = %+v, %v", hits, err)
	}
	top := hits[0]
	if top.Speaker != "Rosa" {
		t.Errorf("top hit %q has speaker %q, want the imported Rosa", top.Text, top.Speaker)
	}
	if !reflect.DeepEqual(top.Tags, []string{"pottery", "class"}) {
		t.Errorf("top hit %q has tags %v, want its imported ones", top.Text, top.Tags)
	}
	if top.Why == nil || !strings.Contains(strings.Join(top.Why.Words, " "), "pottery") || top.Why.Date != "2023-05-08" || top.Why.Fields[0] != "text" {
		t.Errorf("top hit %q says why %+v; want the words, the text field and its date (a when question)", top.Text, top.Why)
	}
	st, err := fresh.sup.memoryService.MemoryStats(ctx)
	if err != nil || len(st.Agents) != 2 || st.Agents[0].Agent != "ann" || st.Agents[0].Count != 4 || st.Agents[0].Kinds["chat"] != 1 ||
		st.Agents[0].Oldest.Format("2006-01-02") != "2023-05-08" || st.Agents[0].Bytes == 0 {
		t.Errorf("stats per agent = %+v, %v", st.Agents, err)
	}
}

// A batch with one bad record stores none of it, and the error names the line, the field
// and the fix.
func TestMemoryImportAllOrNothing(t *testing.T) {
	ctx := context.Background()
	h := newHarness(t, withMemory(t))
	h.create(api.CreateAgentRequest{Name: "ann", Description: "d", Goals: []string{"g"}, Start: new(bool)})
	h.create(api.CreateAgentRequest{Name: "bob", Description: "d", Goals: []string{"g"}, Start: new(bool)})
	if _, err := h.sup.memoryService.ImportMemory(ctx, api.MemoryImportRequest{Agent: "bob", Records: []api.MemoryRecord{{ID: "m-bobs", Text: "bob's"}}}); err != nil {
		t.Fatal(err)
	}
	good := api.MemoryRecord{Text: "fine"}
	cases := []struct {
		name string
		req  api.MemoryImportRequest
		want string
	}{
		{"bad_time", api.MemoryImportRequest{Records: []api.MemoryRecord{good, {Text: "x", Time: "May 8"}}, Lines: []int{3, 7}},
			`line 7: field "time": "May 8" is not an RFC 3339 time: write it like 2023-05-08T13:56:00Z`},
		{"unknown_agent", api.MemoryImportRequest{Agent: "ann", Records: []api.MemoryRecord{good, {Text: "x", Agent: "nobody"}}},
			`line 2: field "agent": no agent "nobody": create it first (agentctl new nobody) or fix the name`},
		{"another_owners_id", api.MemoryImportRequest{Agent: "ann", Records: []api.MemoryRecord{good, {ID: "m-bobs", Text: "mine now"}}},
			`line 2: field "id": "m-bobs" is another owner's memory: leave the id out to import it as a new memory`},
		{"huge_text", api.MemoryImportRequest{Records: []api.MemoryRecord{{Text: strings.Repeat("x", api.MaxTextBytes+1)}}},
			`line 1: field "text": 8001 bytes, over 8000: split it into several records`},
		{"too_many", api.MemoryImportRequest{Records: make([]api.MemoryRecord, api.MemoryImportBatchMax+1)},
			"1001 records in one request, over 1000: send the file in batches"},
		{"lines_mismatch", api.MemoryImportRequest{Records: []api.MemoryRecord{good}, Lines: []int{1, 2}},
			"2 lines for 1 records"},
		{"empty", api.MemoryImportRequest{}, "no records to import"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := h.sup.memoryService.ImportMemory(ctx, c.req)
			if !errors.Is(err, api.ErrBadRequest) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("import: %v; want a bad request saying %q", err, c.want)
			}
		})
	}
	if got := exportAll(t, h.sup.memoryService, ""); len(got) != 1 || got[0].Text != "bob's" {
		t.Errorf("refused batches stored something: %+v", got)
	}
	off := newHarness(t)
	if _, err := off.sup.memoryService.ImportMemory(ctx, api.MemoryImportRequest{Records: []api.MemoryRecord{good}}); !errors.Is(err, api.ErrConflict) {
		t.Errorf("import with memory off: %v, want a conflict naming the config", err)
	}
	if _, err := h.sup.memoryService.ExportMemory(ctx, api.MemoryExportRequest{Limit: 5001}); err == nil {
		t.Error("export with limit 5001 accepted")
	}
	if _, err := h.sup.memoryService.ExportMemory(ctx, api.MemoryExportRequest{Agent: "nobody"}); !errors.Is(err, api.ErrNotFound) {
		t.Errorf("export of an unknown agent: %v, want not found", err)
	}
}

// An import far larger than the index queue neither drops memories nor forces a rebuild.
func TestMemoryImportLargeKeepsTheIndex(t *testing.T) {
	if testing.Short() {
		t.Skip("20,000 memories")
	}
	ctx := context.Background()
	h := newHarness(t, withMemory(t))
	h.create(api.CreateAgentRequest{Name: "ann", Description: "d", Goals: []string{"g"}, Start: new(bool)})
	recs := make([]api.MemoryRecord, api.MemoryImportBatchMax)
	for b := range 20 {
		for i := range recs {
			recs[i] = api.MemoryRecord{Text: fmt.Sprintf("fact %d of batch %d about the garden", i, b), Time: "2023-05-08T13:56:00Z"}
		}
		if _, err := h.sup.memoryService.ImportMemory(ctx, api.MemoryImportRequest{Agent: "ann", Records: recs}); err != nil {
			t.Fatal(err)
		}
	}
	flush(t, h.opt.Memory.Index)
	st, err := h.sup.memoryService.MemoryStats(ctx)
	if err != nil || st.Memories != 20_000 || st.Indexed != 20_000 || st.Dropped != 0 || st.NeedsRebuild {
		t.Errorf("after importing 20,000: %+v, %v", st, err)
	}
}
