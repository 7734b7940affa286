package wake

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentd/agentd/api"
)

// TestAnyAll: with any (the default) one condition that says wake wakes the model; with
// all every one must, and the conditions that changed keep their change until then.
func TestAnyAll(t *testing.T) {
	r := newRig(t, false)
	ws := workspace(t)
	write(t, filepath.Join(ws, "a", "x.txt"), "1\n")
	write(t, filepath.Join(ws, "b", "x.txt"), "1\n")
	p := newPage(t)
	p.set("page one\n", `"1"`)
	tg := Target{Workspace: ws}
	anyC := Conditions{Changed: []string{"a"}, URLs: []string{p.URL}}
	allC := Conditions{Changed: []string{"a"}, URLs: []string{p.URL}, All: true}
	anyID, allID := r.schedule("s-any"), r.schedule("s-all")
	r.fire(anyID, anyC, tg)
	r.fire(allID, allC, tg)

	write(t, filepath.Join(ws, "a", "x.txt"), "2\n") // one condition changes
	if v := r.fire(anyID, anyC, tg); v.Outcome != Wake || !strings.Contains(v.Observation, "a/x.txt") || strings.Contains(v.Observation, "page") {
		t.Fatalf("any, one changed: %+v", v)
	}
	if v := r.fire(allID, allC, tg); v.Outcome != NothingToDo || !strings.Contains(v.Reason, "a: changed 1 file") || !strings.Contains(v.Reason, "not modified") {
		t.Fatalf("all, one changed: %+v", v)
	}
	p.set("page two\n", `"2"`) // now the other changes too
	if v := r.fire(allID, allC, tg); v.Outcome != Wake || !strings.Contains(v.Observation, "a/x.txt") || !strings.Contains(v.Observation, "+page two") {
		t.Fatalf("all, both changed: %+v", v)
	}
	if v := r.fire(allID, allC, tg); v.Outcome != NothingToDo {
		t.Fatalf("all, after its run: %+v", v)
	}

	// A failed check does not hide a change under any, and is counted all the same.
	mixed := Conditions{Changed: []string{"gone/x.txt"}, URLs: []string{p.URL}}
	id := r.schedule("s-mixed")
	if v := r.fire(id, mixed, tg); v.Outcome != Wake || v.Failures != 1 || !strings.Contains(v.Reason, "and check failed: --when-changed gone/x.txt") {
		t.Fatalf("first look at the page, the path missing: %+v", v)
	}
	if v := r.fire(id, mixed, tg); v.Outcome != CheckFailed || v.Wake || v.Failures != 2 {
		t.Fatalf("the page unchanged, the path missing: %+v", v)
	}
	p.set("page three\n", `"3"`)
	if v := r.fire(id, mixed, tg); v.Outcome != Wake || !v.Wake || v.Failures != 3 || !strings.Contains(v.Reason, "and check failed (3 in a row)") ||
		!strings.Contains(v.Observation, "+page three") {
		t.Fatalf("the page changed, the path missing: %+v", v)
	}
}

// TestFailurePolicy: failed checks are counted in a row; the FailAfter-th is surfaced once;
// before it a failure skips, from it --when-failed decides (skip, or wake telling the
// model why); a check that runs again ends the run of failures.
func TestFailurePolicy(t *testing.T) {
	for _, policy := range []string{OnFailureSkip, OnFailureWake} {
		t.Run(policy, func(t *testing.T) {
			r := newRig(t, false)
			id := r.schedule("s-fail")
			ws := workspace(t)
			c := Conditions{Changed: []string{"inbox/new"}, OnFailure: policy, FailAfter: 2}
			var surfaced []int
			for i := 1; i <= 4; i++ {
				v := r.fire(id, c, Target{Workspace: ws}) // inbox does not exist
				if v.Outcome != CheckFailed || v.Failures != i || !strings.Contains(v.Reason, "inbox") {
					t.Fatalf("failure %d: %+v", i, v)
				}
				if v.Surface {
					surfaced = append(surfaced, i)
				}
				wake := policy == OnFailureWake && i >= 2
				if v.Wake != wake || wake != strings.Contains(v.Observation, "failed "+string(rune('0'+i))+" times in a row") {
					t.Fatalf("failure %d, policy %s: wake %v, observation %q", i, policy, v.Wake, v.Observation)
				}
			}
			if len(surfaced) != 1 || surfaced[0] != 2 {
				t.Fatalf("surfaced at %v; want once, at the 2nd", surfaced)
			}
			os.MkdirAll(filepath.Join(ws, "inbox"), 0o755)
			if v := r.fire(id, c, Target{Workspace: ws}); v.Outcome == CheckFailed || v.Failures != 0 {
				t.Fatalf("after the fix: %+v", v)
			}
			if w := r.state(id); w.Failures != 0 || !strings.Contains(w.LastError, "inbox") {
				t.Fatalf("stored after the fix: %+v", w)
			}
		})
	}
}

// TestStateSurvivesRestart: what the last started run saw and the failed checks in a row
// are in the store: after a restart an unchanged folder and page are nothing to do, a
// change made while the daemon was down wakes (a catch-up firing is checked the same
// way), and the count of failures goes on.
func TestStateSurvivesRestart(t *testing.T) {
	r := newRig(t, false)
	ws := workspace(t)
	write(t, filepath.Join(ws, "notes", "a.txt"), "a\n")
	p := newPage(t)
	p.set("stable\n", `"s"`)
	id, failing := r.schedule("s-restart"), r.schedule("s-failing")
	c := Conditions{Changed: []string{"notes"}, URLs: []string{p.URL}}
	bad := Conditions{Changed: []string{"missing/x"}}
	tg := Target{Workspace: ws}
	r.fire(id, c, tg)
	r.fire(failing, bad, tg)

	r.restart()
	if v := r.fire(id, c, tg); v.Outcome != NothingToDo || p.lastINM() != `"s"` {
		t.Fatalf("after a restart: %+v", v)
	}
	if v := r.fire(failing, bad, tg); v.Failures != 2 {
		t.Fatalf("failures after a restart: %+v", v)
	}
	r.close()
	write(t, filepath.Join(ws, "notes", "b.txt"), "written while agentd was down\n")
	r.open()
	if v := r.fire(id, c, tg); v.Outcome != Wake || !strings.Contains(v.Observation, "created file notes/b.txt") {
		t.Fatalf("a change made while down: %+v", v)
	}
}

// TestEditedConditionsLookAnew: a condition added by an edit has nothing to compare with
// and wakes once; the ones kept keep what the last run saw; a removed one is forgotten
// by the next run that starts.
func TestEditedConditionsLookAnew(t *testing.T) {
	r := newRig(t, false)
	ws := workspace(t)
	write(t, filepath.Join(ws, "a", "x"), "1\n")
	write(t, filepath.Join(ws, "b", "x"), "1\n")
	id := r.schedule("s-edit")
	tg := Target{Workspace: ws}
	r.fire(id, Conditions{Changed: []string{"a"}}, tg)
	v := r.fire(id, Conditions{Changed: []string{"a", "b"}}, tg)
	if v.Outcome != Wake || !strings.Contains(v.Reason, "b: first look") || strings.Contains(v.Reason, "a: first look") {
		t.Fatalf("after adding b: %+v", v)
	}
	write(t, filepath.Join(ws, "b", "x"), "2\n")
	if v := r.fire(id, Conditions{Changed: []string{"b"}}, tg); v.Outcome != Wake {
		t.Fatalf("b changed: %+v", v)
	}
	if seen := r.state(id).Seen; strings.Contains(seen, `"changed a"`) {
		t.Fatalf("a removed condition's state is kept: %s", seen)
	}
}

// TestNoConditionsAlwaysWakes: a schedule without conditions wakes at every firing, as
// before they existed, and stores nothing.
func TestNoConditionsAlwaysWakes(t *testing.T) {
	r := newRig(t, false)
	id := r.schedule("s-none")
	if v := r.fire(id, Conditions{}, Target{}); v.Outcome != Wake || !v.Wake {
		t.Fatalf("%+v", v)
	}
}

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
