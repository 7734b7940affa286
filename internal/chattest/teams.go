package chattest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	ollama "github.com/ollama/ollama/api"
)

// Build is a workflow of two roles: the CEO speaks through the model; the programmer
// has a command, so it is a real agent whose proposals are decided in the thread.
const Build = `
name = "build"
root = "build"
[roles.ceo]
description = "the CEO"
[roles.programmer]
description = "a programmer"
commands = ["bots_test_touch"]
max_steps = 4
[phases.code]
instructor = "ceo"
assistant = "programmer"
prompt = "Touch the page."
store = "code"
max_turns = 4
[states.build]
phases = ["code"]
`

// WithTeams gives the daemon a team engine over a teams directory holding build.toml
// (Build) and files (name → contents); the CEO always says the same.
func (d *Daemon) WithTeams(t testing.TB, files map[string]string) {
	d.TeamsDir = t.TempDir()
	files["build.toml"] = Build
	for name, src := range files {
		if err := os.WriteFile(filepath.Join(d.TeamsDir, name), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	d.OnChat = func(req *ollama.ChatRequest) (string, bool) {
		if len(req.Messages) > 0 && strings.HasPrefix(req.Messages[0].Content, "You are ceo,") {
			return "Instruction: touch the page.", true
		}
		return "", false
	}
}

// /agent team starts only workflows in the teams directory: a workflow file elsewhere,
// named by its path or by a symbolic or hard link in the directory, is refused unread,
// the answer naming the directory, and no run or thread starts.
func teamFileOutsideTheDirectoryRefused(t *testing.T, c Chat) {
	d := c.Daemon()
	outside := filepath.Join(t.TempDir(), "outside.toml") // a valid workflow, elsewhere
	if err := os.WriteFile(outside, []byte(Build), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(d.TeamsDir, "linked.toml")); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(outside, filepath.Join(d.TeamsDir, "hard.toml")); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ file, want string }{
		{outside, outside + " is not in the teams directory " + d.TeamsDir},
		{"linked", "chat starts only files inside the teams directory " + d.TeamsDir},
		{"hard", "chat starts only files inside the teams directory " + d.TeamsDir},
	} {
		if got := c.Team(Approver, tc.file, "say hi"); !strings.Contains(got, "Could not start the team") || !strings.Contains(got, tc.want) {
			t.Errorf("/agent team %s = %q, want a refusal with %q", tc.file, got, tc.want)
		}
	}
	if runs, _ := d.Eng.Teams(t.Context()); len(runs) != 0 {
		t.Errorf("team runs started: %+v", runs)
	}
	if Has(c.Posted(""), "Team ") {
		t.Errorf("a refused /agent team opened a thread:\n%s", strings.Join(c.Posted(""), "\n"))
	}
}
