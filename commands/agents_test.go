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
