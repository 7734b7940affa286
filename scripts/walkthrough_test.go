package scripts_test

import (
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentd/agentd/internal/ollamatest"
	"github.com/agentd/agentd/internal/testutil"
	ollama "github.com/ollama/ollama/api"
)

// The walk-through's model: it lists the folder, then proposes to write a file, which the
// newcomer leaves waiting (Ctrl-C) and later refuses from a second shell.
const (
	listReply  = `{"thoughts":{"observations":"An empty folder.","text":"Look first.","reasoning":"Listing is harmless.","self_criticism":"None yet.","plan":"- list\n- write","speak":"I will look around."},"command":{"name":"list_folder","args":{"path":"."}}}`
	writeReply = `{"thoughts":{"observations":"Nothing here.","text":"Write the notes.","reasoning":"The task asks for notes.","self_criticism":"Keep it short.","plan":"- write notes.txt","speak":"I will write notes.txt."},"command":{"name":"write_file","args":{"path":"notes.txt","contents":"hello"}}}`
)

// TestNewcomerWalkthrough is the first hour of a new user, scripted in real terminals
// (tmux panes): scripts/run.sh in one shell, a proposal answered y, Ctrl-C at the next
// one (run.sh asks whether to stop agentd: Enter keeps it), then a second shell where
// plain bin/agentctl (no $AGENTD_SOCKET) lists the agent and follows it, and n ends its
// run. The transcript of both shells is saved (its path is logged, and printed by
// scripts/test.sh) for the closing note.
func TestNewcomerWalkthrough(t *testing.T) {
	tmuxBin, err := exec.LookPath("tmux")
	if err != nil {
		t.Fatalf("the newcomer walk-through runs in tmux panes: install it (apt-get install tmux); scripts/test.sh does")
	}
	var chats atomic.Int32
	fake := ollamatest.NewFake(t)
	fake.SetDefault(func(req *ollama.ChatRequest) string {
		if strings.Contains(string(req.Format), "best_practices") {
			return `{"name":"Note Taker","description":"keeps notes","best_practices":["look first"],"constraints":["stay in the workspace"]}`
		}
		if chats.Add(1) == 1 {
			return listReply
		}
		return writeReply
	})
	home := testutil.ShortTempDir(t)
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	// No $USER or $LOGNAME, as in many containers: deciders must still show by name.
	var env []string
	for _, kv := range cleanEnv() {
		if !strings.HasPrefix(kv, "USER=") && !strings.HasPrefix(kv, "LOGNAME=") {
			env = append(env, kv)
		}
	}
	env = append(env,
		"OLLAMA_HOST="+fake.Addr(), "AGENTD_MODEL="+ollamatest.TinyModelName,
		"AGENTD_HOME="+filepath.Join(home, "state"), "XDG_RUNTIME_DIR="+filepath.Join(home, "run"), "TMPDIR="+home,
		"TERM=xterm-256color", "LANG=C.UTF-8")
	if err := os.MkdirAll(filepath.Join(home, "run"), 0o700); err != nil {
		t.Fatal(err)
	}
	conf := filepath.Join(home, "tmux.conf")
	if err := os.WriteFile(conf, []byte("set -g history-limit 20000\nset -g status off\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tm := &tmux{t: t, bin: tmuxBin, sock: filepath.Join(home, "tmux.sock"), conf: conf, env: env}
	t.Cleanup(func() {
		tm.run("kill-server")
		sh(t, root, env, "", "scripts/run.sh", "stop")
	})
	began := time.Now()

	// Shell 1: the README's one command.
	tm.run("new-session", "-d", "-s", "walk", "-x", "160", "-y", "48", "-c", root, "bash --norc --noprofile -i")
	first := "walk:0"
	tm.typeLine(first, `scripts/run.sh "write notes.txt"`)
	tm.waitFor(first, "Approve? [", 1, 3*time.Minute) // the first run builds the binaries
	tm.typeLine(first, "y")
	tm.waitFor(first, "result: succeeded list_folder", 1, time.Minute)
	tm.waitFor(first, "Approve? [", 2, time.Minute) // write_file waits
	tm.keys(first, "C-c")
	tm.waitFor(first, "stop agentd and what run.sh started now?", 1, 30*time.Second)
	tm.keys(first, "Enter") // the default: keep it running
	tm.waitFor(first, "stop them with: scripts/run.sh stop", 1, 30*time.Second)

	// Shell 2: a second terminal, in the same directory, as the same user.
	tm.run("new-window", "-t", "walk", "-c", root, "bash --norc --noprofile -i")
	second := "walk:1"
	tm.typeLine(second, "bin/agentctl ls")
	tm.waitFor(second, "note-taker", 1, 30*time.Second)
	tm.typeLine(second, "bin/agentctl follow note-taker")
	tm.waitFor(second, "Approve? [", 1, 30*time.Second)
	tm.typeLine(second, "n")
	tm.waitFor(second, "finished:", 1, 30*time.Second)
	tm.typeLine(second, "echo follow exited $?")
	tm.waitFor(second, "follow exited 0", 1, 30*time.Second)
	took := time.Since(began)

	one, two := tm.capture(first), tm.capture(second)
	transcript := fmt.Sprintf("# newcomer walk-through, %s (took %s)\n\n## shell 1\n%s\n\n## shell 2 (a second terminal)\n%s\n",
		time.Now().UTC().Format(time.RFC3339), took.Round(time.Second), one, two)
	path := transcriptPath()
	if err := os.WriteFile(path, []byte(transcript), 0o644); err != nil {
		t.Errorf("saving the transcript: %v", err)
	}
	t.Logf("walk-through transcript (%s): %s", took.Round(time.Second), path)

	for _, want := range []string{
		"decision: approved by",
		"agentd keeps running, with your agents",
		"still running, started by run.sh: agentd; stop them with: scripts/run.sh stop",
	} {
		if !strings.Contains(one, want) {
			t.Errorf("shell 1 lacks %q:\n%s", want, one)
		}
	}
	for _, want := range []string{"note-taker", "following note-taker", "write_file(", "decision: denied by"} {
		if !strings.Contains(two, want) {
			t.Errorf("shell 2 lacks %q:\n%s", want, two)
		}
	}
	if me, err := user.Current(); err == nil && !strings.Contains(one, "decision: approved by "+me.Username+" via agentctl") {
		t.Errorf("shell 1 does not name the decider %s:\n%s", me.Username, one)
	}
	if strings.Contains(one+two, "uid 0") || strings.Contains(one+two, "by uid ") {
		t.Errorf("a decider shows as a uid, not a name:\n%s\n%s", one, two)
	}
	if strings.Count(one, "Answer:")+strings.Count(two, "Answer:") > 0 {
		t.Errorf("an Answer: prompt with no question:\n%s\n%s", one, two)
	}
	// The state agentd keeps is private: 0700 and its database 0600.
	for path, want := range map[string]os.FileMode{
		filepath.Join(home, "state", "state"):              0o700,
		filepath.Join(home, "state", "state", "agentd.db"): 0o600,
	} {
		if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != want {
			t.Errorf("%s: %v (err %v), want mode %04o", path, fi.Mode().Perm(), err, want)
		}
	}
}

// transcriptPath is where the walk-through's transcript goes: $AGENTD_LOGS (scripts/test.sh
// sets it) or the temp dir, named so the closing note can point at it.
func transcriptPath() string {
	dir := os.Getenv("AGENTD_LOGS")
	if dir == "" || os.MkdirAll(dir, 0o755) != nil {
		dir = os.TempDir()
	}
	return filepath.Join(dir, "walkthrough.txt")
}

// tmux drives a private tmux server: its own socket and config, the test's environment.
type tmux struct {
	t               *testing.T
	bin, sock, conf string
	env             []string
}

func (m *tmux) run(args ...string) string {
	m.t.Helper()
	cmd := exec.Command(m.bin, append([]string{"-S", m.sock, "-f", m.conf}, args...)...)
	cmd.Env = m.env
	out, err := cmd.CombinedOutput()
	if err != nil && args[0] != "kill-server" {
		m.t.Fatalf("tmux %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// typeLine types line into pane and presses Enter, as a person does.
func (m *tmux) typeLine(pane, line string) {
	m.t.Helper()
	m.run("send-keys", "-t", pane, "-l", line)
	m.run("send-keys", "-t", pane, "Enter")
}

func (m *tmux) keys(pane string, keys ...string) {
	m.t.Helper()
	m.run(append([]string{"send-keys", "-t", pane}, keys...)...)
}

// capture is the pane's whole history as text, wrapped lines joined, blank tail dropped.
func (m *tmux) capture(pane string) string {
	m.t.Helper()
	return strings.TrimRight(m.run("capture-pane", "-p", "-J", "-S", "-", "-t", pane), "\n ")
}

// waitFor waits until the pane has shown text n times, failing with the pane's content.
func (m *tmux) waitFor(pane, text string, n int, timeout time.Duration) {
	m.t.Helper()
	if !testutil.Wait(timeout, func() bool { return strings.Count(m.capture(pane), text) >= n }) {
		m.t.Fatalf("pane %s never showed %q (x%d) within %s:\n%s", pane, text, n, timeout, m.capture(pane))
	}
}
