package integration

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	ollama "github.com/ollama/ollama/api"

	"github.com/agentd/agentd/api"
	"github.com/agentd/agentd/cmd/agentctl/cli"
	"github.com/agentd/agentd/daemon/config"
	"github.com/agentd/agentd/daemon/server"
	"github.com/agentd/agentd/internal/ollamatest"
	"github.com/agentd/agentd/internal/testutil"
)

// TestFollowThroughAProposalAnApprovalAndTheResult runs `agentctl follow` (the cli
// package's entry) against the daemon's real wiring in this process (server.Run, with
// the in-process Ollama fake): what follow prints comes from the real supervisor's event
// stream, not a fake daemon's. Through a proposal, the approval typed at follow's prompt,
// its result, and the finish proposal approved the same way, follow asks each time
// (a state event showing the agent as it was before the proposal left it thinking, with
// its spinner, and never asking), shows each step's lines in order, and ends with the run.
func TestFollowThroughAProposalAnApprovalAndTheResult(t *testing.T) {
	a, out, errOut := followThrough(t, "state: thinking", "follow", "walker")

	// The lines follow printed, each step's in order, times and the user's name aside.
	stamp := regexp.MustCompile(`^\d\d:\d\d:\d\d `)
	by := regexp.MustCompile(` by \S+ via agentctl$`)
	var got []string
	for _, l := range strings.Split(strings.TrimRight(out.String(), "\n"), "\n") {
		l = by.ReplaceAllString(stamp.ReplaceAllString(l, "T "), " by PERSON via agentctl")
		if strings.HasPrefix(l, "T ") || !strings.HasPrefix(l, " ") {
			got = append(got, l)
		}
	}
	want := []string{
		"following walker (" + a.ID + ")",
		"goals:",
		"state: thinking",
		"T proposal (step 1):",
		"T decision: approved by PERSON via agentctl",
		"T state: executing",
		"T result: succeeded list_folder(path=\".\")",
		"T state: thinking",
		"T proposal (step 2):",
		"T decision: approved by PERSON via agentctl",
		"T state: executing",
		"T result: succeeded finish(reason=\"looked around\")",
		"T state: idle: finished: looked around",
		"T finished: looked around",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("follow's lines:\n%s\nwant:\n%s\nfull stdout:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"), out)
	}
	if strings.Contains(out.String()+errOut.String(), "\x1b") {
		t.Errorf("escape codes (a spinner) written without a terminal:\n%q", errOut)
	}
}

// startInProcess runs the daemon's wiring (server.Run) in this process with the config
// cfgText, on a temporary state dir and socket, until the test ends; it returns the socket
// once the daemon answers on it.
func startInProcess(t *testing.T, cfgText string) string {
	t.Helper()
	dir := t.TempDir()
	path := filepath.Join(dir, "agentd.toml")
	if err := os.WriteFile(path, []byte(cfgText), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, _, err := config.Load(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	cfg.StateDir, cfg.Socket = filepath.Join(dir, "state"), filepath.Join(testutil.ShortTempDir(t), "s")
	ctx, cancel := context.WithCancel(context.Background())
	ended := make(chan error, 1)
	go func() {
		ended <- server.Run(ctx, cfg, slog.New(slog.DiscardHandler), server.Options{Version: "integration-test"})
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-ended; err != nil {
			t.Errorf("the daemon ended with %v", err)
		}
	})
	c := &api.Client{Socket: cfg.Socket}
	if !testutil.Wait(30*time.Second, func() bool {
		select {
		case err := <-ended:
			ended <- err
			t.Fatalf("the daemon ended before it answered: %v", err)
		default:
		}
		_, err := api.StatusRoute.Do(context.Background(), c, "", api.None{})
		return err == nil
	}) {
		t.Fatal("the daemon did not answer on its socket within 30s")
	}
	return cfg.Socket
}

// followThrough runs `agentctl [args] follow walker` on a new agent named walker of the
// daemon's real wiring, in this process, and approves its two proposals at follow's
// prompt: list_folder, made once follow shows what shown names, then finish. It returns
// the agent and what follow wrote once it ended with the run.
func followThrough(t *testing.T, shown string, args ...string) (*api.Agent, *testutil.SyncBuffer, *testutil.SyncBuffer) {
	t.Helper()
	fake := ollamatest.NewFake(t)
	// The first proposal waits until follow has shown the agent: it is made while
	// follow follows, as a person watching a new agent sees it.
	following := make(chan struct{})
	var calls atomic.Int32
	fake.OnChat(func(*ollama.ChatRequest) (string, error) {
		switch calls.Add(1) {
		case 1:
			select {
			case <-following:
			case <-time.After(30 * time.Second):
			}
			return reply("list_folder", map[string]string{"path": "."}), nil
		case 2:
			return reply("finish", map[string]string{"reason": "looked around"}), nil
		}
		return "", errors.New("no third reply: the run should have finished")
	})
	sock := startInProcess(t, configText(fake.URL(), 4096, []string{"list_folder", "ask_user", "finish"}))
	c := &api.Client{Socket: sock}
	a := create(t, c, "walker")

	pr, pw := io.Pipe()
	out, errOut := &testutil.SyncBuffer{}, &testutil.SyncBuffer{}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(func() { cancel(); pw.Close() })
	done := make(chan int, 1)
	go func() { done <- cli.Run(ctx, append([]string{"--socket", sock}, args...), pr, out, errOut) }()

	if !testutil.Wait(30*time.Second, func() bool { return strings.Contains(out.String(), shown) }) {
		t.Fatalf("follow never showed %q\nstdout:\n%s\nstderr:\n%s", shown, out, errOut)
	}
	close(following)
	const prompt = "Approve? [y / y -N / y! / n / n! / feedback / ?]: "
	for n, what := range []string{"list_folder", "finish"} {
		if !testutil.Wait(30*time.Second, func() bool { return strings.Count(errOut.String(), prompt) > n }) {
			t.Fatalf("follow never asked about %s (prompt %d)\nstdout:\n%s\nstderr:\n%s", what, n+1, out, errOut)
		}
		if _, err := io.WriteString(pw, "y\n"); err != nil {
			t.Fatal(err)
		}
	}
	select {
	case code := <-done:
		if code != 0 {
			t.Fatalf("follow exited %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("follow did not end with the run\nstdout:\n%s\nstderr:\n%s", out, errOut)
	}

	return a, out, errOut
}

// TestFollowJSONShowsTheAgentAwaitingAfterAProposal: `agentctl --json follow` prints the
// real supervisor's events as they come. The state event right after a proposal left to a
// person shows the agent awaiting that decision (one that showed it as it was before, still
// thinking, kept follow's spinner going and its prompt away), and each step's events come
// in order: proposal, decision, result, and the run's finish last.
func TestFollowJSONShowsTheAgentAwaitingAfterAProposal(t *testing.T) {
	_, out, _ := followThrough(t, "", "--json", "follow", "walker")
	var evs []api.Event
	for _, l := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		var ev api.Event
		if err := json.Unmarshal([]byte(l), &ev); err != nil {
			t.Fatalf("follow --json printed %q, not an event: %v", l, err)
		}
		evs = append(evs, ev)
	}
	// The first proposal may come before follow subscribed (it then reads the agent): the
	// second is made while it follows, after the first one's result.
	var steps []string
	for i, ev := range evs {
		switch ev.Type {
		case api.EventProposal:
			steps = append(steps, "proposal "+ev.Proposal.Command)
			next := nextState(evs[i+1:])
			if next == nil {
				t.Errorf("no state event after the proposal of %s", ev.Proposal.Command)
			} else if next.State != api.StateAwaitingDecision || next.Pending == nil || next.Pending.ID != ev.Proposal.ID {
				t.Errorf("the state event after the proposal of %s shows the agent %s (pending %v), want it awaiting that decision", ev.Proposal.Command, next.State, next.Pending != nil)
			}
		case api.EventDecision:
			steps = append(steps, "decision "+string(ev.Decision.Kind))
		case api.EventResult:
			steps = append(steps, "result "+ev.Episode.Command+" "+ev.Episode.Outcome)
		case api.EventFinish:
			steps = append(steps, "finish "+ev.Message)
		}
	}
	want := []string{"decision approve", "result list_folder succeeded", "proposal finish", "decision approve", "result finish succeeded", "finish looked around"}
	got := strings.Join(steps, "\n")
	if !strings.HasSuffix(got, strings.Join(want, "\n")) || (len(steps) != len(want) && steps[0] != "proposal list_folder") {
		t.Errorf("follow --json's events:\n%s\nwant them to end with:\n%s\nstdout:\n%s", got, strings.Join(want, "\n"), out)
	}
}

// nextState is the agent of the first state event in evs, nil if none.
func nextState(evs []api.Event) *api.Agent {
	for _, ev := range evs {
		if ev.Type == api.EventState {
			return ev.Agent
		}
	}
	return nil
}
