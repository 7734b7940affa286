package agent

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentd/agentd/api"
	"github.com/agentd/agentd/commands"
	"github.com/agentd/agentd/daemon/config"
	"github.com/agentd/agentd/daemon/store"
	"github.com/agentd/agentd/memory"
	ollama "github.com/ollama/ollama/api"
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

// TestFileMemoriesCommitWithTheResult checks that a written file's memories are stored in
// the step's result transaction (one durable commit per step, not two): handed to the
// runner, not written by the component, and stored with the episode's stamp.
func TestFileMemoriesCommitWithTheResult(t *testing.T) {
	h := newHarness(t, withMemory(t))
	var n atomic.Int32
	h.fake.OnChat(func(*ollama.ChatRequest) (string, error) {
		if n.Add(1) == 1 {
			return reply("write_file", map[string]string{"path": "notes/a.txt", "contents": "alpha file"}), nil
		}
		return reply("finish", map[string]string{"reason": "done"}), nil
	})
	a := h.create(api.CreateAgentRequest{Name: "writer", Description: "writes", Task: "write a file",
		Policy: &api.Policy{Mode: "auto", AutoSteps: 10}})
	h.waitFor(a.ID, "idle", func(a *api.Agent) bool { return a.State == api.StateIdle })
	var file, episode *store.Memory
	ms := storedMemories(t, h.st, a.ID)
	for i, m := range ms {
		switch {
		case m.Kind == "file":
			file = &ms[i]
		case m.Kind == "episode" && m.Source == "step 1 write_file":
			episode = &ms[i]
		}
	}
	if file == nil || episode == nil {
		t.Fatalf("memories %+v: want the file's and step 1's", ms)
	}
	if !file.Created.Equal(episode.Created) {
		t.Errorf("file memory stored at %v, step 1's episode at %v: want one transaction", file.Created, episode.Created)
	}

	// The component itself only stages the write when the runner gives it a place.
	comp := memoryComponent{mem: h.sup.mem, st: h.sup.st, memory: h.sup.memoryService, history: h.sup.episodeHistory, model: &h.sup.model}
	var staged stagedWrites
	o := &commands.Outcome{Command: "write_file", Args: []byte(`{"path":"b.txt","contents":"bravo"}`)}
	step := &commands.Step{AgentID: a.ID}
	if err := comp.AfterExecute(withStagedWrites(context.Background(), &staged), step, o); err != nil {
		t.Fatal(err)
	}
	count := func() int {
		c := 0
		for _, m := range storedMemories(t, h.st, a.ID) {
			if m.Source == "b.txt" {
				c++
			}
		}
		return c
	}
	if len(staged.fns) != 1 || count() != 0 {
		t.Fatalf("staged %d writes, %d memories of b.txt stored: want 1 staged, none stored", len(staged.fns), count())
	}
	if err := h.st.Tx(context.Background(), staged.fns[0]); err != nil {
		t.Fatal(err)
	}
	if count() != 1 {
		t.Errorf("after the staged write: %d memories of b.txt, want 1", count())
	}
}

// TestMemorySearchFindsTheWriteBeforeIt: a memory added, or imported, through the API is
// found by the search right after it, though the index batches its writes (here for an
// hour, so nothing but the search's own wait can index it in time).
func TestMemorySearchFindsTheWriteBeforeIt(t *testing.T) {
	ctx := context.Background()
	h := newHarness(t, func(o *Options) {
		ix, err := memory.Open(filepath.Join(o.StateDir, "memory"), memory.Options{BatchDelay: time.Hour, BatchSize: 1000})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { ix.Close() })
		o.Memory = MemoryOf(config.Default().Memory, ix)
	})
	h.create(api.CreateAgentRequest{Name: "keeper", Description: "d", Goals: []string{"g"}, Start: new(bool)})
	svc := h.sup.memoryService
	if _, err := svc.AddMemory(ctx, api.MemoryAddRequest{Agent: "keeper", Text: "the spare key is under the blue flowerpot"}); err != nil {
		t.Fatal(err)
	}
	hits, err := svc.SearchMemory(ctx, api.MemorySearchRequest{Agent: "keeper", Query: "flowerpot key"})
	if err != nil {
		t.Fatal(err)
	}
	if len(hits) != 1 || !strings.Contains(hits[0].Text, "blue flowerpot") {
		t.Errorf("the search right after memory add found %+v, want the memory just added", hits)
	}
	if _, err := svc.ImportMemory(ctx, api.MemoryImportRequest{Agent: "keeper", Records: []api.MemoryRecord{
		{Text: "the boiler service is due in March"}, {Text: "the bins go out on Tuesday"}}}); err != nil {
		t.Fatal(err)
	}
	if hits, err = svc.SearchMemory(ctx, api.MemorySearchRequest{Agent: "keeper", Query: "boiler service"}); err != nil || len(hits) != 1 {
		t.Errorf("the search right after memory import found %+v, %v; want the memory imported", hits, err)
	}
}
