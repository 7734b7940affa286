package agent

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentd/agentd/api"
	"github.com/agentd/agentd/daemon/config"
	"github.com/agentd/agentd/memory"
)

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
