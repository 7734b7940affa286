package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentd/agentd/api"
)

// TestRealOllamaTeam runs the shipped software-company workflow on the real Ollama server
// and the tiny random-weight model, started with agentctl, and asserts only structure: the
// run terminates with a recorded reason within its turn limit, every phase end has a mode,
// and every proposal of a role agent went through a decision. Proposals the programmer
// makes are decided through the client (the first approved, the rest denied, which ends
// that role's turn), as a person would.
func TestRealOllamaTeam(t *testing.T) {
	t.Parallel() // see TestRealOllamaRun
	begin := time.Now()
	_, d := startRealDaemon(t)
	c := d.client()

	src, err := os.ReadFile("../../examples/teams/software_company.toml")
	if err != nil {
		t.Fatal(err)
	}
	// A smaller run than the example's, to bound the test's time; the shape is the same.
	// The random model sets language only now and then, so the example's design → code
	// condition made this test take 15 s or 3 minutes; it goes on to code every time here,
	// which is the part this test is for (the programmer's proposals decided by a person).
	// Six design turns, then the CTO's and the programmer's first turns in coding.
	const maxTurns = 8
	text := string(src)
	for _, e := range []struct{ from, to, why string }{
		{"max_turns = 80", fmt.Sprint("max_turns = ", maxTurns), "the run's turn limit: two design turns a phase, then coding"},
		// Random weights fill write_file's contents to its 2,000-character bound, about
		// 2,000 tokens a proposal: two proposals a programmer's turn, not eight.
		{"max_steps = 8", "max_steps = 2", "the programmer's steps a turn"},
		{"store = \"modality\"\nmax_turns = 6", "store = \"modality\"\nmax_turns = 2", "demand_analysis's turns"},
		{"store = \"language\"\nmax_turns = 4", "store = \"language\"\nmax_turns = 2", "language_choice's turns"},
		{"store = \"ideas\"\nmax_turns = 6", "store = \"ideas\"\nmax_turns = 2", "brainstorm's turns"},
		{`next = [{ state = "code", when = "language is set" }, "end"]`, `next = ["code"]`, "design's next state"},
	} {
		edited := strings.Replace(text, e.from, e.to, 1)
		if edited == text {
			t.Fatalf("the example's %q line (%s) is gone: update this test", e.from, e.why)
		}
		text = edited
	}
	file := filepath.Join(t.TempDir(), "software_company.toml")
	if err := os.WriteFile(file, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	var r api.TeamRun
	if err := json.Unmarshal(ctl(t, d.socket, "--json", "team", "run", "--keep-agents", file, "a CLI that counts words"), &r); err != nil || r.ID == "" {
		t.Fatalf("agentctl --json team run: %v (%s)", err, jsonString(r))
	}

	// A bound against hangs, not a performance check.
	deadline := begin.Add(15 * time.Minute)
	ctx := context.Background()
	decided := map[string]bool{}
	for {
		cur, err := c.Teams().Get(ctx, r.ID)
		if err != nil {
			t.Fatal(err)
		}
		r = *cur
		if r.Status != api.TeamRunning {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the team run did not end in time: %s", jsonString(r))
		}
		if r.Waiting != "" {
			if a, err := c.Agent(ctx, r.Waiting); err == nil {
				switch {
				case a.State == api.StateAwaitingDecision && a.Pending != nil && !decided[a.Pending.ID]:
					kind := api.DecisionDeny
					if len(decided) == 0 {
						kind = api.DecisionApprove
					}
					if _, err := c.Decide(ctx, a.ID, api.DecideRequest{ProposalID: a.Pending.ID, Kind: kind, By: "tester", Source: "integration"}); err != nil {
						t.Logf("deciding %s: %v", a.Pending.ID, err)
					}
					decided[a.Pending.ID] = true
				case a.Question != nil:
					c.Answer(ctx, a.ID, api.AnswerRequest{ProposalID: a.Question.ProposalID, Text: "Do what you think is best.", By: "tester"})
				case a.State == api.StatePaused:
					c.Resume(ctx, a.ID)
				}
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Logf("team run %s ended %s after %d turns in %v: %s", r.ID, r.Status, r.Turns, time.Since(begin).Round(time.Millisecond), r.Reason)

	if r.Status != api.TeamFinished && r.Status != api.TeamTurnLimit {
		t.Errorf("status %s (%s), want finished or turn_limit", r.Status, r.Reason)
	}
	if r.Reason == "" || r.Turns > maxTurns || r.EndedAt.IsZero() {
		t.Errorf("run: %s", jsonString(r))
	}
	full, err := c.Teams().Get(ctx, r.ID)
	if err != nil {
		t.Fatal(err)
	}
	tr := full.Transcript
	if len(tr) == 0 || tr[len(tr)-1].Kind != api.TurnEnd || tr[len(tr)-1].Mode != r.Status {
		t.Fatalf("transcript does not end with the run's end: %s", jsonString(tr))
	}
	messages := 0
	for i, turn := range tr {
		if turn.Seq != i+1 {
			t.Errorf("turn %d has seq %d", i+1, turn.Seq)
		}
		switch turn.Kind {
		case api.TurnMessage:
			messages++
			if turn.Role == "" || turn.Phase == "" {
				t.Errorf("unlabelled message: %s", jsonString(turn))
			}
		case api.TurnPhaseEnd:
			if turn.Mode == "" || turn.Text == "" {
				t.Errorf("phase end without a reason: %s", jsonString(turn))
			}
		}
	}
	if messages != r.Turns {
		t.Errorf("%d messages in the transcript, the run counted %d turns", messages, r.Turns)
	}
	// Design ends after its six turns and always goes on to code: the programmer had a turn.
	if _, ok := full.Agents["programmer"]; !ok {
		t.Errorf("the run never reached the programmer: agents %s", jsonString(full.Agents))
	}
	t.Logf("%d programmer proposals decided here", len(decided))
	// Every proposal of a role agent was decided by a person or by the policy, never run
	// unasked (--keep-agents keeps the agents to look at).
	for role, id := range full.Agents {
		ps, err := api.ProposalsRoute.Do(ctx, c, id, api.None{})
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range ps {
			if p.Status == api.ProposalSucceeded && p.Command == "write_file" && !decided[p.ID] {
				t.Errorf("role %s: write_file %s ran without a person's decision", role, p.ID)
			}
		}
	}
	var list []api.TeamRun
	if err := json.Unmarshal(ctl(t, d.socket, "--json", "team", "ls"), &list); err != nil || len(list) != 1 || list[0].ID != r.ID {
		t.Errorf("agentctl --json team ls: %v, %s", err, jsonString(list))
	}
}
