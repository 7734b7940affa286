package llm

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/agentd/agentd/commands"
	"github.com/agentd/agentd/internal/testutil"
)

func baseRequest() ChatRequest {
	return ChatRequest{
		Model:    "tiny",
		Messages: []Message{{Role: "system", Content: "You are test."}, {Role: "user", Content: "Determine exactly one command to use next."}},
		NumCtx:   2048, NumPredict: 512,
	}
}

// proposeCase is one scripted conversation for TestPropose.
type proposeCase struct {
	name         string
	steps        []chatStep
	wantCommand  string
	wantArgs     string
	wantCalls    int
	wantRepaired bool
	wantRetried  bool
	// retryMentions must appear in the retry's feedback message.
	retryMentions string
	// wantErr checks the error; nil means success is expected.
	wantErr func(error) bool
}

var proposeCases = []proposeCase{
	{name: "valid_first_time", steps: []chatStep{{content: reply("test_echo", `{"text":"hi"}`)}},
		wantCommand: "test_echo", wantArgs: `{"text":"hi"}`, wantCalls: 1},
	{name: "fenced_reply_repaired", steps: []chatStep{{content: "```json\n" + reply("test_add", `{"a":1,"b":2}`) + "\n```"}},
		wantCommand: "test_add", wantArgs: `{"a":1,"b":2}`, wantCalls: 1, wantRepaired: true},
	{name: "prose_and_trailing_comma_repaired", steps: []chatStep{{content: "Next I will finish. " + reply("test_done", `{}`)[:len(reply("test_done", `{}`))-1] + ",}\nDone."}},
		wantCommand: "test_done", wantArgs: `{}`, wantCalls: 1, wantRepaired: true},
	{name: "missing_args_become_empty", steps: []chatStep{{content: `{"thoughts":` + testThoughts + `,"command":{"name":"test_done"}}`}},
		wantCommand: "test_done", wantArgs: `{}`, wantCalls: 1},
	{name: "invalid_then_valid_on_retry", steps: []chatStep{{content: "I think we should echo."}, {content: reply("test_echo", `{"text":"ok"}`)}},
		wantCommand: "test_echo", wantArgs: `{"text":"ok"}`, wantCalls: 2, wantRetried: true, retryMentions: "reply is not valid JSON"},
	{name: "unknown_command_then_valid", steps: []chatStep{{content: reply("rm_rf", `{}`)}, {content: reply("test_done", `{}`)}},
		wantCommand: "test_done", wantArgs: `{}`, wantCalls: 2, wantRetried: true,
		retryMentions: `unknown command "rm_rf"; choose one of: test_add, test_done, test_echo`},
	{name: "args_failing_schema_then_valid", steps: []chatStep{{content: reply("test_add", `{"a":"one","b":2}`)}, {content: reply("test_add", `{"a":1,"b":2}`)}},
		wantCommand: "test_add", wantArgs: `{"a":1,"b":2}`, wantCalls: 2, wantRetried: true, retryMentions: "$.command.args.a: "},
	{name: "cut_off_reply_says_so", steps: []chatStep{{content: `{"thoughts":{"text":"aaaa`, doneReason: "length"}, {content: reply("test_done", `{}`)}},
		wantCommand: "test_done", wantArgs: `{}`, wantCalls: 2, wantRetried: true, retryMentions: "cut off after 20 tokens"},
	{name: "invalid_twice", steps: []chatStep{{content: "no"}, {content: reply("test_echo", `{"text":1}`)}},
		wantCalls: 2, wantRetried: true, wantErr: func(err error) bool {
			var inv *InvalidReplyError
			return errors.As(err, &inv) && strings.HasPrefix(inv.Problems[0], "$.command.args.text: ") &&
				inv.Raw == reply("test_echo", `{"text":1}`)
		}},
	{name: "unknown_command_twice", steps: []chatStep{{content: reply("rm_rf", `{}`)}},
		wantCalls: 2, wantRetried: true, wantErr: func(err error) bool {
			var inv *InvalidReplyError
			var ve *commands.ValidationError
			return errors.As(err, &inv) && errors.As(err, &ve) && strings.Contains(err.Error(), `unknown command "rm_rf"`)
		}},
	{name: "server_error_500", steps: []chatStep{{status: 500}},
		wantErr: func(err error) bool { return errors.Is(err, ErrUnavailable) }},
	{name: "busy_503", steps: []chatStep{{status: 503}},
		wantErr: func(err error) bool { return errors.Is(err, ErrUnavailable) }},
	{name: "model_not_found_404", steps: []chatStep{{status: 404}},
		wantErr: func(err error) bool {
			var nf *ModelNotFoundError
			return errors.As(err, &nf) && nf.Model == "tiny" && !errors.Is(err, ErrUnavailable)
		}},
	{name: "server_error_on_retry", steps: []chatStep{{content: "no"}, {status: 500}},
		wantCalls: 1, wantRetried: true, wantErr: func(err error) bool { return errors.Is(err, ErrUnavailable) }},
}

func TestPropose(t *testing.T) {
	for _, tt := range proposeCases {
		t.Run(tt.name, func(t *testing.T) {
			f := newFake(t, tt.steps...)
			req := baseRequest()
			p, err := Propose(context.Background(), f.client(t), req, testSet)
			if tt.wantErr != nil {
				if err == nil || !tt.wantErr(err) {
					t.Fatalf("err = %v (%T)", err, err)
				}
				if p != nil && p.Reply != nil {
					t.Errorf("Reply = %+v alongside an error", p.Reply)
				}
			} else if err != nil {
				t.Fatal(err)
			} else {
				if p.Reply.Command.Name != tt.wantCommand || string(p.Reply.Command.Args) != tt.wantArgs {
					t.Errorf("command = %s %s, want %s %s", p.Reply.Command.Name, p.Reply.Command.Args, tt.wantCommand, tt.wantArgs)
				}
				if p.Reply.Thoughts.Speak != "hi" {
					t.Errorf("thoughts = %+v", p.Reply.Thoughts)
				}
				if p.Repaired != tt.wantRepaired {
					t.Errorf("Repaired = %v, want %v", p.Repaired, tt.wantRepaired)
				}
				if p.PromptTokens != 100*tt.wantCalls || p.EvalTokens != 20*tt.wantCalls {
					t.Errorf("tokens = %d/%d, want them summed over %d calls", p.PromptTokens, p.EvalTokens, tt.wantCalls)
				}
			}
			if p != nil && (p.Calls != tt.wantCalls || p.Retried != tt.wantRetried) {
				t.Errorf("Calls = %d, Retried = %v; want %d, %v", p.Calls, p.Retried, tt.wantCalls, tt.wantRetried)
			}
			checkRequests(t, f.requests(), tt.steps, tt.retryMentions)
			if len(req.Messages) != 2 {
				t.Errorf("the caller's messages changed: %v", req.Messages)
			}
		})
	}
}

// checkRequests asserts every call carried the reply schema and that a retry carried the
// bad reply and the feedback naming its problems.
func checkRequests(t *testing.T, reqs []map[string]any, steps []chatStep, mentions string) {
	t.Helper()
	want, _ := json.Marshal(commands.ReplySchema(testSet))
	for i, r := range reqs {
		got, _ := json.Marshal(r["format"])
		var a, b any
		json.Unmarshal(got, &a)
		json.Unmarshal(want, &b)
		ga, _ := json.Marshal(a)
		gb, _ := json.Marshal(b)
		if string(ga) != string(gb) {
			t.Errorf("call %d: format = %s, want the reply schema", i+1, got)
		}
	}
	if len(reqs) < 2 {
		return
	}
	msgs, _ := reqs[1]["messages"].([]any)
	if len(msgs) != 4 {
		t.Fatalf("retry has %d messages, want 4", len(msgs))
	}
	bad, _ := msgs[2].(map[string]any)
	if bad["role"] != "assistant" || bad["content"] != steps[0].content {
		t.Errorf("retry message 3 = %v, want the bad reply", bad)
	}
	fb, _ := msgs[3].(map[string]any)
	text, _ := fb["content"].(string)
	if fb["role"] != "user" || !strings.HasPrefix(text, "Your reply was invalid: ") ||
		!strings.HasSuffix(text, ". Reply again with a single JSON object that matches the schema.") {
		t.Errorf("feedback = %v", fb)
	}
	if mentions != "" && !strings.Contains(text, mentions) {
		t.Errorf("feedback %q does not mention %q", text, mentions)
	}
}

func TestProposeConnectionRefused(t *testing.T) {
	c, err := New("http://"+testutil.FreeAddr(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	p, err := Propose(context.Background(), c, baseRequest(), testSet)
	if !errors.Is(err, ErrUnavailable) {
		t.Fatalf("err = %v, want ErrUnavailable", err)
	}
	if p == nil || p.Reply != nil || p.Calls != 0 {
		t.Errorf("proposal = %+v", p)
	}
}

func TestProposeEmptySet(t *testing.T) {
	f := newFake(t)
	if _, err := Propose(context.Background(), f.client(t), baseRequest(), nil); err == nil {
		t.Fatal("no error for an empty command set")
	}
}

type testProfile struct {
	Name          string   `json:"name" max:"30"`
	Description   string   `json:"description" max:"160"`
	BestPractices []string `json:"best_practices" max:"5"`
	Note          string   `json:"note,omitempty"`
}

func TestGenerate(t *testing.T) {
	schema := commands.FromStruct(testProfile{})
	good := `{"name":"researcher","description":"finds things","best_practices":["cite sources"]}`
	tests := []struct {
		name      string
		steps     []chatStep
		wantCalls int
		wantErr   bool
	}{
		{"valid_first_time", []chatStep{{content: good}}, 1, false},
		{"fenced", []chatStep{{content: "```json\n" + good + "\n```"}}, 1, false},
		{"missing_field_then_valid", []chatStep{{content: `{"name":"x","note":"stale"}`}, {content: good}}, 2, false},
		{"invalid_twice", []chatStep{{content: `{"name":1}`}}, 2, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFake(t, tt.steps...)
			out := testProfile{Name: "untouched"}
			g, err := Generate(context.Background(), f.client(t), baseRequest(), schema, &out)
			if g == nil || g.Calls != tt.wantCalls || g.PromptTokens != 100*tt.wantCalls {
				t.Fatalf("generation = %+v, want %d calls", g, tt.wantCalls)
			}
			if tt.wantErr {
				var inv *InvalidReplyError
				if !errors.As(err, &inv) {
					t.Fatalf("err = %v, want *InvalidReplyError", err)
				}
				if out.Name != "untouched" {
					t.Errorf("out changed on error: %+v", out)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if out.Name != "researcher" || out.Note != "" || len(out.BestPractices) != 1 {
				t.Errorf("out = %+v", out)
			}
		})
	}
}

func TestGenerateRejectsBadOut(t *testing.T) {
	f := newFake(t)
	var p testProfile
	if _, err := Generate(context.Background(), f.client(t), baseRequest(), commands.FromStruct(p), p); err == nil {
		t.Error("no error for a non-pointer out")
	}
}

func TestRepair(t *testing.T) {
	tests := []struct {
		name   string
		in     string
		want   string
		wantOK bool
	}{
		{"plain_object", `{"a":1}`, `{"a":1}`, true},
		{"surrounding_space", "\n  {\"a\":1}\n", `{"a":1}`, true},
		{"json_fence", "```json\n{\"a\":1}\n```", `{"a":1}`, true},
		{"bare_fence", "```\n{\"a\":1}\n```", `{"a":1}`, true},
		{"fence_with_prose", "Sure! Here it is:\n```json\n{\"a\":{\"b\":[1,2]}}\n```\nHope that helps.", `{"a":{"b":[1,2]}}`, true},
		{"unclosed_fence", "```json\n{\"a\":1}", `{"a":1}`, true},
		{"fence_on_one_line", "```{\"a\":1}```", `{"a":1}`, true},
		{"second_fence_has_the_object", "```bash\nls\n```\n```json\n{\"a\":1}\n```", `{"a":1}`, true},
		{"prose_around_json", `I will run this: {"a": "b"} and then stop.`, `{"a": "b"}`, true},
		{"first_of_two_objects", `{"a":1} {"b":2}`, `{"a":1}`, true},
		{"braces_in_strings", `x {"a":"}{ \"}\" {","b":"]"} y`, `{"a":"}{ \"}\" {","b":"]"}`, true},
		{"escaped_backslash_before_quote", `{"a":"c:\\","b":"}"}`, `{"a":"c:\\","b":"}"}`, true},
		{"trailing_comma_object", "{\"a\":1,\n}", "{\"a\":1\n}", true},
		{"trailing_comma_array", `{"a":[1,2, ],}`, `{"a":[1,2 ]}`, true},
		{"comma_in_string_kept", `{"a":",}",}`, `{"a":",}"}`, true},
		{"prose_braces_before_object", `use {curly} braces: {"a":1}`, `{"a":1}`, true},
		{"invalid_object_kept_for_errors", `{a: 1} then {"b": {"c": 2}}`, `{"b": {"c": 2}}`, true},
		{"only_invalid_object", `{"a": True}`, `{"a": True}`, true},
		{"inner_object_not_taken", `{"a": True, "b": {"c": 2}}`, `{"a": True, "b": {"c": 2}}`, true},
		{"unicode", `Voilà: {"text":"héllo 世界 🙂","n":"\u00e9"}`, `{"text":"héllo 世界 🙂","n":"\u00e9"}`, true},
		{"unclosed_then_closed", `{ "a": {"b": 1}`, `{"b": 1}`, true},
		{"no_json", "I cannot help with that.", "", false},
		{"empty", "", "", false},
		{"array_only", `[1,2,3]`, "", false},
		{"truncated", `{"thoughts":{"text":"I was cut of`, "", false},
		{"unbalanced_closers", `}}}{`, "", false},
		{"mismatched_closer", `{]`, "", false},
		{"mismatched_then_object", `{[} {"a":[1]}`, `{"a":[1]}`, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := Repair(tt.in)
			if ok != tt.wantOK || got != tt.want {
				t.Errorf("Repair(%q) = %q, %v; want %q, %v", tt.in, got, ok, tt.want, tt.wantOK)
			}
		})
	}
}

func TestRepairAdversarialInputIsFast(t *testing.T) {
	for name, in := range map[string]string{
		"many_open_braces": strings.Repeat("{", 1<<20),
		"many_fences":      strings.Repeat("```\n", 1<<16),
		"many_commas":      "{" + strings.Repeat(",", 1<<20) + "}",
		"deep_nesting":     strings.Repeat(`{"a":`, 1<<16) + "1" + strings.Repeat("}", 1<<16),
	} {
		t.Run(name, func(t *testing.T) {
			Repair(in) // must return promptly; the test's timeout catches quadratic blowups
		})
	}
}

// FuzzParseReply feeds arbitrary model output through the same path Propose uses:
// commands.ParseReply on the text, then on Repair's rewrite of it.
// Invariants: nothing panics; an error is a *commands.ValidationError with problems; an
// accepted reply names a command of the set and its args validate against that command.
func FuzzParseReply(f *testing.F) {
	valid := reply("test_echo", `{"text":"hi"}`)
	for _, seed := range []string{
		valid,
		reply("test_add", `{"a":1,"b":-2}`),
		reply("test_done", `{}`),
		"```json\n" + valid + "\n```",
		"Here you go: " + valid + " Anything else?",
		strings.TrimSuffix(valid, "}}") + ",},}",
		valid[:len(valid)/2],
		reply("rm_rf", `{"path":"/"}`),
		reply("test_add", `{"a":"1","b":2.5}`),
		reply("test_echo", `{"text":"`+strings.Repeat("x", 1024)+`"}`),
		reply("test_echo", `{"text":`+strings.Repeat("[", 200)+strings.Repeat("]", 200)+`}`),
		strings.Repeat(`{"a":`, 200) + "1" + strings.Repeat("}", 200),
		`{"thoughts":null,"command":null}`,
		`{"thoughts":{},"command":{"name":"test_echo","args":{"text":"x"},"extra":1}}`,
		`{"thoughts":` + testThoughts + `,"command":{"name":"test_echo","args":{"text":"\u00e9\ud83d\ude00 世界"}}}`,
		"{\"a\":\"\\",
		"",
		"null",
		"```",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, content string) {
		checkParse(t, content)
		fixed, ok := Repair(content)
		if !ok {
			if fixed != "" {
				t.Fatalf("Repair returned %q with ok=false", fixed)
			}
			return
		}
		if !strings.HasPrefix(fixed, "{") || !strings.HasSuffix(fixed, "}") {
			t.Fatalf("Repair returned %q, not an object", fixed)
		}
		checkParse(t, fixed)
	})
}

func checkParse(t *testing.T, data string) {
	r, err := commands.ParseReply(testSet, []byte(data))
	if err != nil {
		var ve *commands.ValidationError
		if !errors.As(err, &ve) || len(ve.Problems) == 0 {
			t.Fatalf("ParseReply error %v (%T) is not a ValidationError with problems", err, err)
		}
		return
	}
	c, ok := testSet.Get(r.Command.Name)
	if !ok {
		t.Fatalf("ParseReply accepted unknown command %q", r.Command.Name)
	}
	if err := commands.CheckArgs(c.Spec(), r.Command.Args); err != nil {
		t.Fatalf("ParseReply accepted args that do not validate: %v", err)
	}
}
