package llm

import (
	"errors"
	"strings"
	"testing"

	"github.com/agentd/agentd/commands"
)

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
