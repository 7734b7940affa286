package llm

import (
	"strings"
	"testing"
)

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
