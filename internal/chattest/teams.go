package chattest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentd/agentd/bots"

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

// /agent team FILE TASK starts a team run in a new thread whose first note says how to
// stop it; each role's turn is posted labelled with its role; the programmer's proposal
// is sent back with feedback through the dialog, then (a stranger's click refused)
// approved by a click, the relay finding the role agent through the team's thread; the
// phase's end and the run's end are posted with their reasons; role agents leave no
// removal note.
func teamRunInThread(t *testing.T, c Chat) {
	d := c.Daemon()
	d.Script(Touch("page", speak), Touch("roof", speak), Reply("finish", map[string]string{"reason": "<INFO> touched the roof"}, speak))
	thread := c.StartTeam("build", "say hi")
	c.Wait("the CEO's turn", func() bool { return Has(c.Posted(thread), "Instruction: touch the page.") })
	// The ID's dash is escaped on Discord.
	if runs, _ := d.Eng.Teams(t.Context()); len(runs) != 1 || !Has(c.Posted(thread), "Stop it with /agent team stop t") ||
		!Has(c.Posted(thread), strings.TrimPrefix(runs[0].ID, "t-")+".") {
		t.Errorf("the team's first note does not say how to stop it:\n%s", strings.Join(c.Posted(thread), "\n"))
	}
	p := c.RoleProposal(thread, "programmer", 1)
	if text := c.Text(thread, p); !strings.Contains(text, "touch") {
		t.Fatalf("role's proposal = %q", text)
	}
	c.Feedback(Approver, thread, p, "the roof, not the page")
	c.Decided(thread, p, c.Shown("Feedback", Approver)+": the roof, not the page")
	c.Wait("the model to see the feedback", func() bool { return d.ModelSaw("the roof, not the page") })

	p = c.RoleProposal(thread, "programmer", 2)
	c.Click(Stranger, thread, p, bots.ActionApprove)
	c.Wait("the stranger's refusal", func() bool { return c.Answered(Stranger, "not an approver") == 1 })
	c.Click(GroupApprover, thread, p, bots.ActionApprove)
	c.Decided(thread, p, c.Shown("Approved", GroupApprover))
	c.Wait("the run's end", func() bool { return Has(c.Posted(thread), "state build has no next state") })
	ms := c.Posted(thread)
	for _, want := range []string{c.Escaped(TouchCommand), "succeeded", "touched roof", c.Escaped("[programmer]"),
		c.Escaped("<INFO> touched the roof"), "code concluded → code", c.Escaped("Phase code ended (info)"),
		"programmer concluded", "Team run finished"} {
		if !Has(ms, want) {
			t.Errorf("the thread has no %q:\n%s", want, strings.Join(ms, "\n"))
		}
	}
	if Has(ms, "was removed") || Has(ms, "touched page") || Count(ms, "Instruction: touch the page.") != 1 || Count(ms, "Step 2: ") != 1 {
		t.Errorf("thread:\n%s", strings.Join(ms, "\n"))
	}
}
