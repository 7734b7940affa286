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
