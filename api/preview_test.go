package api

import (
	"reflect"
	"strings"
	"testing"
)

func TestPreviewRender(t *testing.T) {
	tests := []struct {
		name  string
		pv    *Preview
		lines []string
		diff  string
	}{
		{"none", nil, nil, ""},
		{"diff_escaped", &Preview{Kind: PreviewDiff, Path: "a\u202e.txt", Diff: "--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\x1b[2J\n+b\u200b\n"},
			[]string{`File: a\u202e.txt`}, "--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\\x1b[2J\n+b\\u200b"},
		{"diff_cut", &Preview{Kind: PreviewDiff, Path: "x", Diff: "--- a/x\n", DiffCut: true},
			[]string{"File: x", "Not fully shown: the diff past its first 64 KiB"}, "--- a/x\n… diff cut at 64 KiB"},
		{"programs_quoted", &Preview{Kind: PreviewProgram, Programs: [][]string{{"echo", "two words", "it's"}, {"wc", "-l"}},
			Dir: "/ws", Sandbox: "bwrap", Network: "none", Note: "line\nbreak"},
			[]string{`Runs (1/2): echo 'two words' 'it'\''s'`, "Runs (2/2): wc -l", "In: /ws", "Sandbox: bwrap", "Network: none", `Note: line\x0abreak`}, ""},
		{"host", &Preview{Kind: PreviewHost, Host: "example.com:443"}, []string{"Connects to: example.com:443"}, ""},
		{"effect_output_and_change", &Preview{Kind: PreviewProgram, Programs: [][]string{{"make", "fmt"}}, Dir: "/ws", Sandbox: "bwrap", Network: "none",
			Effect: &Effect{Output: "formatted\u202e a.go\nexit status 0\n", Summary: "changes 1 file (+1 −1)", From: 1, To: 3},
			Diff:   "modified file a.go (+1 −1)\n--- a/a.go\n+++ b/a.go\n"},
			[]string{"Runs: make fmt", "In: /ws", "Sandbox: bwrap", "Network: none",
				"Effect (run ahead on a copy, network off; approving applies this change): changes 1 file (+1 −1)",
				`Output: formatted\u202e a.go`, "  | exit status 0"}, "modified file a.go (+1 −1)\n--- a/a.go\n+++ b/a.go"},
		{"effect_not_fully_shown", &Preview{Kind: PreviewProgram, Programs: [][]string{{"cc", "x.c"}}, Dir: "/ws", Sandbox: "bwrap", Network: "none",
			Effect: &Effect{Summary: "changes 1 file (+0 −0)", From: 1, To: 3, NotShown: "a.out (binary: 16000 bytes)\x1b"},
			Diff:   "not fully shown: a.out (binary: 16000 bytes)\ncreated file a.out (mode 0755) (binary: 16000 bytes)\n"},
			[]string{"Runs: cc x.c", "In: /ws", "Sandbox: bwrap", "Network: none",
				"Effect (run ahead on a copy, network off; approving applies this change): changes 1 file (+0 −0)",
				"Output: (none)", `Not fully shown: a.out (binary: 16000 bytes)\x1b`},
			"not fully shown: a.out (binary: 16000 bytes)\ncreated file a.out (mode 0755) (binary: 16000 bytes)"},
		{"effect_output_cut", &Preview{Kind: PreviewProgram, Programs: [][]string{{"seq", "12"}}, Dir: "/ws", Sandbox: "bwrap", Network: "none",
			Effect: &Effect{Output: "1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n11\n12\n", Summary: "no changes", From: 1, To: 3}},
			[]string{"Runs: seq 12", "In: /ws", "Sandbox: bwrap", "Network: none",
				"Effect (run ahead on a copy, network off; approving applies this change): no changes",
				"Output: 1", "  | 2", "  | 3", "  | 4", "  | 5", "  | 6", "  | 7", "  | 8", "  | 9", "  | 10", "  … 2 more lines"}, ""},
		{"effect_none", &Preview{Kind: PreviewProgram, Programs: [][]string{{"curl", "x"}}, Dir: "/ws", Sandbox: "bwrap", Network: "host",
			Effect: &Effect{None: "this agent's commands have the network, which a run ahead takes away"}},
			[]string{"Runs: curl x", "In: /ws", "Sandbox: bwrap", "Network: host",
				"Effect: not run ahead: this agent's commands have the network, which a run ahead takes away"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			lines, diff := tt.pv.Render()
			if !reflect.DeepEqual(lines, tt.lines) || diff != tt.diff {
				t.Errorf("Render() =\n%q\n%q\nwant\n%q\n%q", lines, diff, tt.lines, tt.diff)
			}
		})
	}
}

func TestHeadLines(t *testing.T) {
	tests := []struct {
		name, text string
		n          int
		want       string
		cut        bool
	}{
		{"shorter", "a\nb", 3, "a\nb", false},
		{"exact", "a\nb\nc", 3, "a\nb\nc", false},
		{"exact_trailing_newline", "a\nb\nc\n", 3, "a\nb\nc\n", false},
		{"longer", "a\nb\nc\nd", 2, "a\nb", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got, cut := HeadLines(tt.text, tt.n); got != tt.want || cut != tt.cut {
				t.Errorf("HeadLines(%q, %d) = %q, %v; want %q, %v", tt.text, tt.n, got, cut, tt.want, tt.cut)
			}
		})
	}
}

// An effect run ahead in a pattern's profile never tells a person that approving applies
// it: only an approval in that profile does.
func TestRenderSaysApprovingAppliesOnlyForPersonsProfile(t *testing.T) {
	for _, tc := range []struct {
		profile string
		applies bool
	}{{"", true}, {"bounded-write", false}, {"bounded", false}} {
		pv := &Preview{Kind: PreviewProgram, Effect: &Effect{Summary: "changes 1 file", From: 1, To: 2, Profile: tc.profile}}
		lines, _ := pv.Render()
		if got := strings.Contains(strings.Join(lines, "\n"), "approving applies this change"); got != tc.applies {
			t.Errorf("profile %q: says approving applies = %v, want %v:\n%s", tc.profile, got, tc.applies, strings.Join(lines, "\n"))
		}
	}
}

// Two previews that end in the same tree from different starts show different diffs:
// their Refs differ, so a decision made from one does not apply the other; a preview
// with nothing to apply is named by its Hash alone.
func TestPreviewsEndingAlikeFromDifferentStartsHaveDifferentRefs(t *testing.T) {
	withEffect := func(e *Effect) *Proposal {
		return &Proposal{Hash: "abc", Preview: &Preview{Kind: PreviewProgram, Effect: e}}
	}
	a := withEffect(&Effect{From: 1, To: 3, FromRoot: "start-1", ToRoot: "root"})
	b := withEffect(&Effect{From: 2, To: 3, FromRoot: "start-2", ToRoot: "root"})
	if a.Ref() == b.Ref() {
		t.Errorf("previews from trees start-1 and start-2 to the same tree share the ref %s", a.Ref())
	}
	if again := withEffect(&Effect{From: 1, To: 3, FromRoot: "start-1", ToRoot: "root"}); again.Ref() != a.Ref() {
		t.Errorf("the same preview gives refs %s and %s", a.Ref(), again.Ref())
	}
	if none := withEffect(&Effect{None: "needs the network"}); none.Ref() != "abc" {
		t.Errorf("a preview with nothing to apply has ref %s, want its hash", none.Ref())
	}
}

// A preview's Ref names the trees a person saw, not the preview store's checkpoint ids:
// the store may give an id again to another tree after a crash, so a start tree other
// than the one shown, under the same ids, gives another Ref, and the same trees under
// other ids give the same one.
func TestRefNamesTheTreesShownNotTheCheckpointIDs(t *testing.T) {
	ref := func(e Effect) string {
		return (&Proposal{Hash: "abc", Preview: &Preview{Kind: PreviewProgram, Effect: &e}}).Ref()
	}
	shown := ref(Effect{From: 1, To: 2, FromRoot: "start", ToRoot: "end"})
	if other := ref(Effect{From: 1, To: 2, FromRoot: "another start", ToRoot: "end"}); other == shown {
		t.Errorf("another start tree under the same checkpoint ids has the ref shown, %s", shown)
	}
	if moved := ref(Effect{From: 7, To: 8, FromRoot: "start", ToRoot: "end"}); moved != shown {
		t.Errorf("the same trees under other checkpoint ids have the ref %s, want the one shown %s", moved, shown)
	}
}
