package commands

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/agentd/agentd/internal/testutil"
)

// fakeMemory is a Memory over a slice.
type fakeMemory struct {
	saved []string
	hits  []Recalled
	err   error
}

func (f *fakeMemory) Save(_ context.Context, agentID, text string) (string, error) {
	if f.err != nil {
		return "", f.err
	}
	f.saved = append(f.saved, agentID+": "+text)
	return "m-1", nil
}

func (f *fakeMemory) Recall(_ context.Context, agentID, query string, k int) ([]Recalled, error) {
	if f.err != nil {
		return nil, f.err
	}
	return f.hits[:min(k, len(f.hits))], nil
}

func TestGoldenMemorySchemas(t *testing.T) {
	for _, name := range []string{MemoryAdd, MemorySearch} {
		c, ok := Lookup(name)
		if !ok {
			t.Fatalf("%s is not registered", name)
		}
		t.Run(name, func(t *testing.T) { testutil.GoldenJSON(t, "testdata/schemas/"+name+".json", c.Spec().Params) })
	}
}

func TestMemoryCommands(t *testing.T) {
	add, _ := Lookup(MemoryAdd)
	search, _ := Lookup(MemorySearch)
	mem := &fakeMemory{hits: []Recalled{
		{Kind: "note", Source: "memory_add", Text: "the deploy key\nis in vault", Score: 2},
		{Kind: "episode", Text: "step 3"},
	}}
	env := Env{AgentID: "a-1", Memory: mem}
	tests := []struct {
		name    string
		cmd     Command
		env     Env
		args    string
		want    string // substring of the output
		wantErr string // substring of the error
	}{
		{name: "add_saves", cmd: add, env: env, args: `{"text":" the key is in vault "}`, want: "saved to memory"},
		{name: "add_empty_text", cmd: add, env: env, args: `{"text":"   "}`, wantErr: "empty text"},
		{name: "add_missing_text", cmd: add, env: env, args: `{}`, wantErr: `missing required property "text"`},
		{name: "add_without_memory", cmd: add, env: Env{}, args: `{"text":"x"}`, wantErr: "memory is disabled"},
		{name: "search_lists_hits", cmd: search, env: env, args: `{"query":"deploy key"}`,
			want: "2 memories for \"deploy key\", most relevant first:\n1. [note, memory_add] the deploy key is in vault\n2. [episode] step 3"},
		{name: "search_empty_query", cmd: search, env: env, args: `{"query":""}`, wantErr: "empty query"},
		{name: "search_nothing", cmd: search, env: Env{AgentID: "a", Memory: &fakeMemory{}}, args: `{"query":"x"}`, want: `nothing in memory matches "x"`},
		{name: "search_failure", cmd: search, env: Env{Memory: &fakeMemory{err: errors.New("index closed")}}, args: `{"query":"x"}`, wantErr: "index closed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := Run(context.Background(), tt.cmd, tt.env, json.RawMessage(tt.args), Limits{})
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || !strings.Contains(out, tt.want) {
				t.Fatalf("out, err = %q, %v; want output containing %q", out, err, tt.want)
			}
		})
	}
	if len(mem.saved) != 1 || mem.saved[0] != "a-1: the key is in vault" {
		t.Errorf("saved = %q, want the trimmed note for a-1", mem.saved)
	}
}
