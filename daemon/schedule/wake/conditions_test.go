package wake

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/agentd/agentd/api"
)

// Flags are the conditions as agentctl's schedule add/when flags and chat's
// /agent schedule when give them.
type Flags = api.WhenFlags

// Parse reads the flags into checked Conditions (see Conditions.Check), as the daemon
// reads what agentctl and chat send.
func Parse(f Flags) (Conditions, error) {
	c, err := f.Conditions()
	if err != nil || c == nil {
		return Conditions{}, err
	}
	return Conditions(*c).Check()
}

// TestParse: the flags as agentctl and chat give them become checked conditions, and
// every malformed path, URL, command line or combination is refused naming the fix.
func TestParse(t *testing.T) {
	tests := []struct {
		name string
		f    Flags
		want string // the conditions' String, or the error's words
		bad  bool
	}{
		{"none", Flags{}, "none: every firing wakes the model", false},
		{"changed_cleaned_and_deduplicated", Flags{Changed: []string{"./notes/", "notes", "/srv/inbox/../inbox"}}, "--when-changed notes --when-changed /srv/inbox", false},
		{"all_of_three_kinds", Flags{Changed: []string{"a b"}, URLs: []string{" https://example.com/feed "}, Commands: []string{"test -s inbox/new"}, All: true, OnFailure: "wake", FailAfter: 5},
			"--when-changed 'a b' --when-url https://example.com/feed --when 'test -s inbox/new' --when-all --when-failed wake --when-failed-after 5", false},
		{"any_and_all", Flags{Changed: []string{"a"}, Any: true, All: true}, "give one", true},
		{"any_without_conditions", Flags{Any: true}, "none is given", true},
		{"all_without_conditions", Flags{All: true}, "none is given", true},
		{"failure_policy_without_conditions", Flags{OnFailure: "wake"}, "no check is given", true},
		{"bad_failure_policy", Flags{Changed: []string{"a"}, OnFailure: "retry"}, "use skip", true},
		{"bad_failure_count", Flags{Changed: []string{"a"}, FailAfter: -1}, "1 to 1000", true},
		{"path_leaves", Flags{Changed: []string{"../etc"}}, "leaves the workspace", true},
		{"path_empty", Flags{Changed: []string{""}}, "is empty", true},
		{"path_nul", Flags{Changed: []string{"a\x00b"}}, "NUL", true},
		{"path_tilde", Flags{Changed: []string{"~/inbox"}}, "not expanded", true},
		{"path_root", Flags{Changed: []string{"/"}}, "whole file system", true},
		{"url_scheme", Flags{URLs: []string{"file:///etc/passwd"}}, "only http and https", true},
		{"url_no_scheme", Flags{URLs: []string{"example.com"}}, "no scheme: write https://example.com", true},
		{"url_no_host", Flags{URLs: []string{"http:///x"}}, "no host", true},
		{"url_credentials", Flags{URLs: []string{"https://me:secret@example.com/"}}, "credentials", true},
		{"url_too_long", Flags{URLs: []string{"https://example.com/" + strings.Repeat("x", 3000)}}, "at most 2048", true},
		{"command_empty", Flags{Commands: []string{"  "}}, "empty", true},
		{"command_nul", Flags{Commands: []string{"true\x00"}}, "NUL", true},
		{"command_too_long", Flags{Commands: []string{strings.Repeat("x", 2001)}}, "at most 2000", true},
		{"too_many", Flags{URLs: []string{"http://a.example/1", "http://a.example/2", "http://a.example/3", "http://a.example/4", "http://a.example/5",
			"http://a.example/6", "http://a.example/7", "http://a.example/8", "http://a.example/9"}}, "at most 8", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := Parse(tt.f)
			switch {
			case tt.bad && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Fatalf("got %+v, %v; want an error with %q", c, err, tt.want)
			case !tt.bad && err != nil:
				t.Fatal(err)
			case !tt.bad && c.String() != tt.want:
				t.Fatalf("got %s\nwant %s", c, tt.want)
			}
		})
	}
}

// TestConditionsJSON: the config file's and the API's form reads back the same, and is
// checked the same way as the flags.
func TestConditionsJSON(t *testing.T) {
	var c Conditions
	in := `{"changed":["notes"],"urls":["https://example.com/feed"],"commands":["test -s x"],"all":true,"on_failure":"wake","fail_after":2}`
	if err := json.Unmarshal([]byte(in), &c); err != nil {
		t.Fatal(err)
	}
	c, err := c.Check()
	if err != nil {
		t.Fatal(err)
	}
	out, _ := json.Marshal(c)
	if string(out) != in {
		t.Fatalf("round trip:\n got %s\nwant %s", out, in)
	}
	if _, err := (Conditions{URLs: []string{"gopher://x"}}).Check(); err == nil {
		t.Fatal("a bad URL in JSON passed")
	}
}
