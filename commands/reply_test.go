package commands

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/agentd/agentd/internal/testutil"
)

const thoughts = `"thoughts":{"observations":"o","text":"t","reasoning":"r","self_criticism":"s","plan":"p","speak":"k"}`

func reply(command string) string { return `{` + thoughts + `,"command":` + command + `}` }

func TestParseReply(t *testing.T) {
	set, err := Resolve(DefaultNames)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name     string
		in       string
		wantName string
		wantArgs string
		wantErr  []string // substrings of the error
	}{
		{name: "valid", in: reply(`{"name":"write_file","args":{"path":"a.txt","contents":"hi"}}`),
			wantName: "write_file", wantArgs: `{"path":"a.txt","contents":"hi"}`},
		{name: "valid_with_spacing", in: "\n  " + reply(`{ "name" : "finish", "args" : { "reason" : "done" } }`) + "\n",
			wantName: "finish", wantArgs: `{ "reason" : "done" }`},
		{name: "trailing_text_after_the_object_is_ignored", in: reply(`{"name":"finish","args":{"reason":"done"}}`) + "\nHope this helps! {\"x\":1}",
			wantName: "finish", wantArgs: `{"reason":"done"}`},
		{name: "unknown_command", in: reply(`{"name":"delete_file","args":{}}`),
			wantErr: []string{`$.command.name: unknown command "delete_file"; choose one of: ask_user, finish, list_folder, read_file, write_file`}},
		{name: "missing_command_name", in: reply(`{"args":{}}`), wantErr: []string{"$.command.name: missing; choose one of"}},
		{name: "missing_args", in: reply(`{"name":"read_file"}`),
			wantErr: []string{`$.command.args: missing required property "path"`, `expected args for read_file: {"type":"object"`}},
		{name: "null_args", in: reply(`{"name":"read_file","args":null}`), wantErr: []string{"$.command.args: want an object, got null"}},
		{name: "bad_args_type", in: reply(`{"name":"read_file","args":{"path":3}}`), wantErr: []string{"$.command.args.path: want a string, got a number"}},
		{name: "args_of_another_command", in: reply(`{"name":"finish","args":{"path":"a"}}`),
			wantErr: []string{`missing required property "reason"`, `unexpected property "path" (allowed: reason)`}},
		{name: "extra_property_in_args", in: reply(`{"name":"read_file","args":{"path":"a","mode":"r"}}`),
			wantErr: []string{`$.command.args: unexpected property "mode" (allowed: path, start_line, end_line)`}},
		{name: "extra_property_in_command", in: reply(`{"name":"finish","args":{"reason":"x"},"why":"y"}`),
			wantErr: []string{`$.command: unexpected property "why" (allowed: name, args)`}},
		{name: "extra_property_at_top", in: `{` + thoughts + `,"command":{"name":"finish","args":{"reason":"x"}},"extra":1}`,
			wantErr: []string{`$: unexpected property "extra" (allowed: thoughts, command)`}},
		{name: "missing_thoughts", in: `{"command":{"name":"finish","args":{"reason":"x"}}}`,
			wantErr: []string{`$: missing required property "thoughts"`}},
		{name: "thought_not_a_string", in: strings.Replace(reply(`{"name":"finish","args":{"reason":"x"}}`), `"plan":"p"`, `"plan":["p"]`, 1),
			wantErr: []string{"$.thoughts.plan: want a string, got an array"}},
		{name: "command_not_an_object", in: `{` + thoughts + `,"command":"finish"}`, wantErr: []string{"$.command: want an object, got a string"}},
		{name: "not_json", in: `I will read the file now.`, wantErr: []string{"reply is not valid JSON"}},
		{name: "text_before_the_object", in: "Sure!\n" + reply(`{"name":"finish","args":{"reason":"x"}}`), wantErr: []string{"reply is not valid JSON"}},
		{name: "truncated", in: reply(`{"name":"finish","args":{"reason":"x"`), wantErr: []string{"reply is not valid JSON"}},
		{name: "empty", in: ``, wantErr: []string{"reply is not valid JSON"}},
		{name: "array", in: `[]`, wantErr: []string{"$: want an object, got an array"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := ParseReply(set, []byte(tt.in))
			if tt.wantErr != nil {
				if err == nil {
					t.Fatalf("ParseReply = %+v, want an error", r)
				}
				if _, ok := err.(*ValidationError); !ok {
					t.Errorf("error %T is not a *ValidationError", err)
				}
				testutil.CheckContains(t, "the error", err.Error(), tt.wantErr, nil)
				return
			}
			if err != nil {
				t.Fatalf("ParseReply: %v", err)
			}
			if r.Command.Name != tt.wantName || string(r.Command.Args) != tt.wantArgs {
				t.Errorf("command %s %s, want %s %s", r.Command.Name, r.Command.Args, tt.wantName, tt.wantArgs)
			}
			if r.Thoughts.Plan != "p" || r.Thoughts.Speak != "k" {
				t.Errorf("thoughts not decoded: %+v", r.Thoughts)
			}
		})
	}
}

// A reply that matches ReplySchema parses: the schema sent to Ollama and the parser agree.
func TestReplySchemaAcceptsWhatParseReplyAccepts(t *testing.T) {
	set, _ := Resolve(DefaultNames)
	for _, in := range []string{
		reply(`{"name":"list_folder","args":{"path":"."}}`),
		reply(`{"name":"ask_user","args":{"question":"which?"}}`),
	} {
		var v any
		json.Unmarshal([]byte(in), &v)
		if err := ReplySchema(set).Validate(v); err != nil {
			t.Errorf("ReplySchema rejects %s: %v", in, err)
		}
		if _, err := ParseReply(set, []byte(in)); err != nil {
			t.Errorf("ParseReply rejects %s: %v", in, err)
		}
	}
	var v any
	json.Unmarshal([]byte(reply(`{"name":"list_folder","args":{"reason":"x"}}`)), &v)
	if err := ReplySchema(set).Validate(v); err == nil {
		t.Error("ReplySchema accepts list_folder with finish's args")
	}
}

func TestCanonicalArgs(t *testing.T) {
	tests := []struct {
		name, a, b string
		equal      bool
	}{
		{name: "key_order", a: `{"b":1,"a":2}`, b: `{"a":2,"b":1}`, equal: true},
		{name: "spacing", a: "{ \"a\" :\n [1, 2] }", b: `{"a":[1,2]}`, equal: true},
		{name: "nested_key_order", a: `{"o":{"y":1,"x":{"q":1,"p":2}}}`, b: `{"o":{"x":{"p":2,"q":1},"y":1}}`, equal: true},
		{name: "empty_is_empty_object", a: ``, b: `{}`, equal: true},
		{name: "different_values", a: `{"a":"x"}`, b: `{"a":"y"}`},
		{name: "array_order_matters", a: `{"a":[1,2]}`, b: `{"a":[2,1]}`},
		{name: "big_integers_stay_distinct", a: `{"n":12345678901234567890}`, b: `{"n":12345678901234567891}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ca, err := CanonicalArgs(json.RawMessage(tt.a))
			if err != nil {
				t.Fatal(err)
			}
			cb, err := CanonicalArgs(json.RawMessage(tt.b))
			if err != nil {
				t.Fatal(err)
			}
			if (string(ca) == string(cb)) != tt.equal {
				t.Errorf("canonical %s and %s: equal %v, want %v", ca, cb, !tt.equal, tt.equal)
			}
		})
	}
	if got, _ := CanonicalArgs(json.RawMessage(`{"b": 1, "a": "x"}`)); string(got) != `{"a":"x","b":1}` {
		t.Errorf("CanonicalArgs = %s", got)
	}
	for _, bad := range []string{`{"a":`, `{"a":1} {"b":2}`, `nope`} {
		if got, err := CanonicalArgs(json.RawMessage(bad)); err == nil {
			t.Errorf("CanonicalArgs(%s) = %s, want an error", bad, got)
		}
	}
}
