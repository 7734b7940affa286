package cli_test

import (
	"os"
	"strings"
	"testing"
)

// TestReadmeScheduleExampleWorks keeps the README's schedule example honest: its
// commands run as written, the schedule goes to the agent the example creates (a
// template's agent starts with an empty workspace), and its goal names no folder outside
// the workspace, which no agent can reach.
func TestReadmeScheduleExampleWorks(t *testing.T) {
	b, err := os.ReadFile("../../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, after, ok := strings.Cut(string(b), "\n## Schedules\n")
	_, block, ok2 := strings.Cut(after, "```sh\n")
	block, _, ok3 := strings.Cut(block, "```")
	if !ok || !ok2 || !ok3 {
		t.Fatal("the README has no sh block under ## Schedules")
	}
	f := newFakeDaemon(t)
	var created string
	for _, line := range strings.Split(strings.ReplaceAll(block, "\\\n", " "), "\n") {
		line, _, _ = strings.Cut(line, "  #") // a comment after the command
		args := shellWords(t, line)
		if len(args) < 2 || args[0] != "agentctl" || (args[1] != "create" && (args[1] != "schedule" || args[2] != "add")) {
			continue
		}
		if r := runCLI(t, "", append([]string{"--socket", f.sock}, args[1:]...)...); r.code != 0 {
			t.Errorf("the README's %q fails: exit %d\n%s%s", line, r.code, r.stdout, r.stderr)
		}
		if args[1] == "create" {
			for i, a := range args {
				if a == "--name" && i+1 < len(args) {
					created = args[i+1]
				}
			}
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.schedules) != 1 {
		t.Fatalf("the README's example added %d schedules, want 1", len(f.schedules))
	}
	s := f.schedules[0]
	if s.Agent == "" || s.Agent != created {
		t.Errorf("the README's schedule goes to agent %q (template %q), want the agent it creates, %q, whose workspace holds the files", s.Agent, s.Template, created)
	}
	for _, w := range strings.Fields(s.Goal) {
		if strings.HasPrefix(w, "~") || strings.HasPrefix(w, "/") || strings.HasPrefix(w, "$HOME") {
			t.Errorf("the README's schedule goal %q names %s, outside every workspace", s.Goal, w)
		}
	}
}

// shellWords splits a command line as a shell does for the README's examples: words
// apart by spaces, double-quoted strings kept whole.
func shellWords(t *testing.T, line string) []string {
	t.Helper()
	var out []string
	var w strings.Builder
	inWord, quoted := false, false
	for _, r := range line {
		switch {
		case r == '"':
			quoted, inWord = !quoted, true
		case r == ' ' && !quoted:
			if inWord {
				out = append(out, w.String())
				w.Reset()
				inWord = false
			}
		default:
			w.WriteRune(r)
			inWord = true
		}
	}
	if quoted {
		t.Fatalf("unbalanced quotes in %q", line)
	}
	if inWord {
		out = append(out, w.String())
	}
	return out
}
