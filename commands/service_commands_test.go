package commands

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/agentd/agentd/internal/testutil"
)

// fakeHelpers records what the sub-agent commands asked for.
type fakeHelpers struct {
	calls []string
	list  []string
	err   error
}

func (f *fakeHelpers) Start(_ context.Context, key, task, prompt string) error {
	f.calls = append(f.calls, "start "+key+"|"+task+"|"+prompt)
	return f.err
}

func (f *fakeHelpers) Message(_ context.Context, key, msg string) error {
	f.calls = append(f.calls, "message "+key+"|"+msg)
	return f.err
}

func (f *fakeHelpers) List(context.Context) ([]string, error) { return f.list, f.err }

func (f *fakeHelpers) Delete(_ context.Context, key string) error {
	f.calls = append(f.calls, "delete "+key)
	return f.err
}

func TestSubAgentCommandSchemas(t *testing.T) {
	for _, name := range []string{StartAgent, MessageAgent, ListAgents, DeleteAgent} {
		c, ok := Lookup(name)
		if !ok {
			t.Fatalf("%s is not registered", name)
		}
		t.Run(name, func(t *testing.T) { testutil.GoldenJSON(t, "testdata/schemas/"+name+".json", c.Spec().Params) })
	}
	for _, n := range DefaultNames {
		if strings.HasSuffix(n, "_agent") || n == ListAgents {
			t.Errorf("%s is in DefaultNames: sub-agent commands are enabled by config only", n)
		}
	}
}

func TestSubAgentCommands(t *testing.T) {
	ctx := context.Background()
	run := func(f *fakeHelpers, name, args string) (string, error) {
		c, _ := Lookup(name)
		env := Env{Workspace: t.TempDir(), AgentID: "a-1"}
		if f != nil {
			env.Helpers = f
		}
		return Run(ctx, c, env, json.RawMessage(args), Limits{})
	}
	tests := []struct {
		name, cmd, args string
		want            string // the call made
		out             string
		err             error
		errText         string
	}{
		{name: "start_awaits", cmd: StartAgent, args: `{"name":"fetcher","task":"fetch pages","prompt":"get example.com"}`,
			want: "start fetcher|fetch pages|get example.com", err: ErrAwaiting},
		{name: "start_prompt_defaults_to_task", cmd: StartAgent, args: `{"name":"fetcher","task":"fetch example.com","prompt":" "}`,
			want: "start fetcher|fetch example.com|fetch example.com", err: ErrAwaiting},
		{name: "start_empty", cmd: StartAgent, args: `{"name":"fetcher","task":"","prompt":""}`, errText: "empty task and prompt"},
		{name: "message_awaits", cmd: MessageAgent, args: `{"key":"fetcher","message":"now example.org"}`,
			want: "message fetcher|now example.org", err: ErrAwaiting},
		{name: "message_empty", cmd: MessageAgent, args: `{"key":"fetcher","message":" "}`, errText: "empty message"},
		{name: "delete", cmd: DeleteAgent, args: `{"key":"fetcher"}`, want: "delete fetcher", out: "deleted helper fetcher"},
		{name: "list_none", cmd: ListAgents, args: `{}`, out: "you have no helper agents; start one with start_agent"},
		{name: "missing_arg", cmd: StartAgent, args: `{"name":"x"}`, errText: `missing required property "task"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := &fakeHelpers{}
			out, err := run(f, tt.cmd, tt.args)
			switch {
			case tt.err != nil:
				if !errors.Is(err, tt.err) {
					t.Fatalf("err = %v, want %v", err, tt.err)
				}
			case tt.errText != "":
				if err == nil || !strings.Contains(err.Error(), tt.errText) {
					t.Fatalf("err = %v, want one saying %q", err, tt.errText)
				}
			case err != nil:
				t.Fatal(err)
			}
			if out != tt.out {
				t.Errorf("out = %q, want %q", out, tt.out)
			}
			if got := strings.Join(f.calls, ";"); got != tt.want {
				t.Errorf("calls = %q, want %q", got, tt.want)
			}
		})
	}
	t.Run("list", func(t *testing.T) {
		out, err := run(&fakeHelpers{list: []string{"fetcher: idle", "writer: thinking"}}, ListAgents, `{}`)
		if err != nil || out != "2 helper agents:\nfetcher: idle\nwriter: thinking" {
			t.Fatalf("out = %q, %v", out, err)
		}
	})
	t.Run("helpers_error_reaches_the_model", func(t *testing.T) {
		_, err := run(&fakeHelpers{err: errors.New("you have 4 helpers, the most allowed")}, StartAgent, `{"name":"x","task":"t","prompt":"p"}`)
		if err == nil || !strings.Contains(err.Error(), "4 helpers") {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("no_helpers", func(t *testing.T) {
		for _, c := range []string{StartAgent, MessageAgent, ListAgents, DeleteAgent} {
			args := map[string]string{StartAgent: `{"name":"x","task":"t","prompt":"p"}`, MessageAgent: `{"key":"x","message":"m"}`,
				ListAgents: `{}`, DeleteAgent: `{"key":"x"}`}[c]
			if _, err := run(nil, c, args); !errors.Is(err, ErrNoHelpers) {
				t.Errorf("%s without Helpers: err = %v", c, err)
			}
		}
	})
}

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
			if testutil.WantErr(t, err, tt.wantErr) {
				return
			}
			if !strings.Contains(out, tt.want) {
				t.Fatalf("out, err = %q, %v; want output containing %q", out, err, tt.want)
			}
		})
	}
	if len(mem.saved) != 1 || mem.saved[0] != "a-1: the key is in vault" {
		t.Errorf("saved = %q, want the trimmed note for a-1", mem.saved)
	}
}
