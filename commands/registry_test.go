package commands

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

// testCmd is a command for exercising Run; it is called directly, never registered.
type testCmd struct {
	exec func(ctx context.Context, args json.RawMessage) (string, error)
}

type testArgs struct {
	N    int    `json:"n" desc:"a number" min:"0"`
	Text string `json:"text,omitempty" desc:"optional text" max:"20"`
}

func (testCmd) Spec() Spec {
	return Spec{Name: "test_cmd", Description: "for tests", Params: FromStruct(testArgs{}), Class: ClassRead}
}

func (c testCmd) Execute(ctx context.Context, _ Env, args json.RawMessage) (string, error) {
	return c.exec(ctx, args)
}

var _ Command = testCmd{}

func TestRun(t *testing.T) {
	block := make(chan struct{})
	t.Cleanup(func() { close(block) }) // lets the abandoned command's goroutine end
	echo := func(_ context.Context, args json.RawMessage) (string, error) { return string(args), nil }
	tests := []struct {
		name    string
		exec    func(context.Context, json.RawMessage) (string, error)
		args    string
		lim     Limits
		want    string
		wantErr string
		is      error
	}{
		{name: "success", exec: echo, args: `{"n":1}`, want: `{"n":1}`},
		{name: "optional_arg", exec: echo, args: `{"n":1,"text":"hi"}`, want: `{"n":1,"text":"hi"}`},
		{name: "missing_required", exec: echo, args: `{}`,
			wantErr: `test_cmd: bad args: $: missing required property "n"; expected params: {"type":"object"`},
		{name: "empty_args_are_an_empty_object", exec: echo, args: ``, wantErr: `missing required property "n"`},
		{name: "null_args", exec: echo, args: `null`, wantErr: "$: want an object, got null"},
		{name: "wrong_type", exec: echo, args: `{"n":"1"}`, wantErr: "$.n: want an integer, got a string"},
		{name: "not_an_integer", exec: echo, args: `{"n":1.5}`, wantErr: "$.n: want an integer, got 1.5"},
		{name: "below_minimum", exec: echo, args: `{"n":-1}`, wantErr: "$.n: -1 is below the minimum 0"},
		{name: "extra_property", exec: echo, args: `{"n":1,"x":2}`, wantErr: `$: unexpected property "x" (allowed: n, text)`},
		{name: "not_json", exec: echo, args: `{n:1}`, wantErr: "test_cmd: args are not valid JSON"},
		{name: "error_passes_through", args: `{"n":1}`, wantErr: "boom",
			exec: func(context.Context, json.RawMessage) (string, error) { return "partial", errors.New("boom") }},
		{name: "panic_becomes_error", args: `{"n":1}`, wantErr: "test_cmd: command panicked: kaboom", is: ErrPanic,
			exec: func(context.Context, json.RawMessage) (string, error) { panic("kaboom") }},
		{name: "nil_map_panic", args: `{"n":1}`, is: ErrPanic, wantErr: "assignment to entry in nil map",
			exec: func(context.Context, json.RawMessage) (string, error) {
				var m map[string]int
				m["x"] = 1
				return "", nil
			}},
		{name: "timeout_honoured", args: `{"n":1}`, lim: Limits{Timeout: 20 * time.Millisecond},
			wantErr: "test_cmd: timed out after 20ms", is: context.DeadlineExceeded,
			exec: func(ctx context.Context, _ json.RawMessage) (string, error) {
				<-ctx.Done()
				return "", ctx.Err()
			}},
		{name: "timeout_ignored_is_abandoned", args: `{"n":1}`, lim: Limits{Timeout: 20 * time.Millisecond},
			wantErr: "test_cmd: timed out after 20ms", is: context.DeadlineExceeded,
			exec: func(context.Context, json.RawMessage) (string, error) {
				<-block // sleeps past the timeout, deaf to its context
				return "too late", nil
			}},
		{name: "output_cap", args: `{"n":1}`, lim: Limits{OutputCap: 4}, want: "abcd\n[output cut at 4 of 10 bytes]",
			exec: func(context.Context, json.RawMessage) (string, error) { return "abcdefghij", nil }},
		{name: "output_cap_keeps_runes_whole", args: `{"n":1}`, lim: Limits{OutputCap: 5}, want: "日\n[output cut at 3 of 9 bytes]",
			exec: func(context.Context, json.RawMessage) (string, error) { return "日本語", nil }},
		{name: "output_cap_on_invalid_bytes", args: `{"n":1}`, lim: Limits{OutputCap: 10}, want: "\x80\x80\x80\x80\x80\x80\x80\n[output cut at 7 of 20 bytes]",
			exec: func(context.Context, json.RawMessage) (string, error) { return strings.Repeat("\x80", 20), nil }},
		{name: "output_under_cap", args: `{"n":1}`, lim: Limits{OutputCap: 9}, want: "日本語", exec: func(context.Context, json.RawMessage) (string, error) { return "日本語", nil }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := Run(context.Background(), testCmd{exec: tt.exec}, Env{}, json.RawMessage(tt.args), tt.lim)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("got %q, %v; want error containing %q", out, err, tt.wantErr)
				}
				if tt.is != nil && !errors.Is(err, tt.is) {
					t.Errorf("error %v does not wrap %v", err, tt.is)
				}
				return
			}
			if err != nil || out != tt.want {
				t.Fatalf("got %q, %v; want %q", out, err, tt.want)
			}
			if utf8.ValidString(tt.want) && !utf8.ValidString(out) {
				t.Errorf("output %q is not valid UTF-8", out)
			}
		})
	}
}

func TestRunDoneContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	ran := false
	c := testCmd{exec: func(context.Context, json.RawMessage) (string, error) { ran = true; return "", nil }}
	_, err := Run(ctx, c, Env{}, json.RawMessage(`{"n":1}`), Limits{})
	if !errors.Is(err, context.Canceled) || ran {
		t.Fatalf("Run under a cancelled context: err %v, ran %v; want context.Canceled and not run", err, ran)
	}
}

func TestRegisterPanics(t *testing.T) {
	tests := []struct {
		name string
		cmd  Command
		want string
	}{
		{name: "duplicate", cmd: specCmd{finishSpec}, want: "finish registered twice"},
		{name: "empty_name", cmd: specCmd{Spec{Params: Object()}}, want: "empty name"},
		{name: "params_not_object", cmd: specCmd{Spec{Name: "x_bad", Params: String("s", 5)}}, want: "Params must be an object schema"},
		{name: "params_nil", cmd: specCmd{Spec{Name: "x_nil"}}, want: "Params must be an object schema"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			defer func() {
				r := recover()
				if r == nil || !strings.Contains(fmt.Sprint(r), tt.want) {
					t.Fatalf("Register panicked with %v, want %q", r, tt.want)
				}
			}()
			Register(tt.cmd)
		})
	}
}

type specCmd struct{ s Spec }

func (c specCmd) Spec() Spec                                                  { return c.s }
func (specCmd) Execute(context.Context, Env, json.RawMessage) (string, error) { return "", nil }

func TestDefaultNames(t *testing.T) {
	set, err := Resolve(DefaultNames)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"list_folder", "read_file", "write_file", "ask_user", "finish"}
	if got := strings.Join(set.Names(), ","); got != strings.Join(want, ",") {
		t.Errorf("default set is %s, want %s", got, strings.Join(want, ","))
	}
	if _, err := Resolve([]string{"finish", "no_such"}); err == nil || !strings.Contains(err.Error(), `unknown command "no_such"`) {
		t.Errorf("Resolve with an unknown name: %v", err)
	}
	if c, ok := set.Get("read_file"); !ok || c.Spec().Name != "read_file" {
		t.Error(`set.Get("read_file") failed`)
	}
	if _, ok := set.Get("nope"); ok {
		t.Error(`set.Get("nope") found something`)
	}
}

func TestBuiltinSpecs(t *testing.T) {
	want := map[string]Class{
		"list_folder": ClassRead, "read_file": ClassRead, "write_file": ClassWriteWorkspace,
		"ask_user": ClassMessage, "finish": ClassMessage,
	}
	total := 0
	for _, name := range DefaultNames {
		t.Run(name, func(t *testing.T) {
			c, ok := Lookup(name)
			if !ok {
				t.Fatalf("%s is not registered", name)
			}
			s := c.Spec()
			if s.Class != want[name] || !s.Idempotent {
				t.Errorf("class %q idempotent %v; want %q, true", s.Class, s.Idempotent, want[name])
			}
			for _, p := range s.Params.Properties {
				if p.Schema.Type == "string" && p.Schema.MaxLength == nil {
					t.Errorf("param %q has no maxLength", p.Name)
				}
				if p.Schema.Description == "" {
					t.Errorf("param %q has no description", p.Name)
				}
			}
			// The prompt lists commands as `- name(param: desc): description`; keep each short.
			line := promptLine(s)
			total += len(line)
			if len(line) > 110 {
				t.Errorf("prompt line is %d chars, want at most 110: %s", len(line), line)
			}
		})
	}
	if total > 470 { // five commands; the nine-command prompt golden in daemon/agent keeps the 2,600 target
		t.Errorf("the default commands take %d chars of prompt, want at most 470", total)
	}
}

func promptLine(s Spec) string {
	var params []string
	for _, p := range s.Params.Properties {
		params = append(params, p.Name+": "+p.Schema.Description)
	}
	return fmt.Sprintf("- %s(%s): %s", s.Name, strings.Join(params, ", "), s.Description)
}

func TestAllSorted(t *testing.T) {
	all := All()
	for i := 1; i < len(all); i++ {
		if all[i-1].Spec().Name >= all[i].Spec().Name {
			t.Fatalf("All is not sorted: %s before %s", all[i-1].Spec().Name, all[i].Spec().Name)
		}
	}
	for _, n := range DefaultNames {
		if _, ok := Lookup(n); !ok {
			t.Errorf("%s missing from the registry", n)
		}
	}
}

func TestMessageCommands(t *testing.T) {
	tests := []struct {
		name, cmd, args string
		want, wantErr   string
	}{
		{name: "finish_returns_reason", cmd: "finish", args: `{"reason":"report written to out.md"}`, want: "report written to out.md"},
		{name: "finish_empty_reason", cmd: "finish", args: `{"reason":""}`, want: "finished"},
		{name: "finish_missing_reason", cmd: "finish", args: `{}`, wantErr: `finish: bad args: $: missing required property "reason"`},
		{name: "finish_extra_arg", cmd: "finish", args: `{"reason":"x","status":"ok"}`, wantErr: `unexpected property "status" (allowed: reason)`},
		{name: "ask_user_is_not_executed", cmd: "ask_user", args: `{"question":"which file?"}`, wantErr: "ask_user: not executable"},
		{name: "ask_user_missing_question", cmd: "ask_user", args: `{}`, wantErr: `missing required property "question"`},
		{name: "ask_user_wrong_type", cmd: "ask_user", args: `{"question":["a"]}`, wantErr: "$.question: want a string, got an array"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := run(t, tt.cmd, t.TempDir(), tt.args, Limits{})
			if !checkOutput(t, out, err, tt.want, tt.wantErr) {
				return
			}
		})
	}
}
