package agent

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/agentd/agentd/daemon/agent/cycle"
)

// Only transit writes an agent's state or a proposal's status: every other change goes
// through cycle.Next. (A new agent's record starts at cycle.Initial.)
func TestOnlyTransitWritesState(t *testing.T) {
	writes := regexp.MustCompile(`SetProposalStatus\(|InsertProposal\(|\b[a-z]+\.Status = |\.State(, [^=]*)? = |StateReason(, [^=]*)? = |State: api\.State`)
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") || f == "transit.go" {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for i, line := range strings.Split(string(b), "\n") {
			if strings.Contains(line, "step.State = ") || strings.Contains(line, "c.Status = api.Check") {
				continue // a command step's key-value state; a doctor check's status
			}
			if writes.MatchString(line) {
				t.Errorf("%s:%d writes an agent's state or a proposal's status outside transit: go through cycle.Next (transit)\n\t%s", f, i+1, strings.TrimSpace(line))
			}
		}
	}
}

// The loop chooses nothing of its own: the runner's files build no event from a kind they
// name (every event they apply is cycle.NextMove's answer), and its loop handles every
// move NextMove can make.
func TestLoopDoesWhatNextMoveSays(t *testing.T) {
	own := regexp.MustCompile(`Kind: cycle\.[A-Z][A-Za-z]*\s*[,}]`) // a kind constant, not NextMove(...)
	for _, f := range []string{"runner.go", "round.go"} {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for i, line := range strings.Split(string(b), "\n") {
			if own.MatchString(line) {
				t.Errorf("%s:%d chooses an event of its own: take it from cycle.NextMove\n\t%s", f, i+1, strings.TrimSpace(line))
			}
		}
	}
	b, err := os.ReadFile("round.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, then := range cycle.Thens {
		name := map[cycle.Then]string{cycle.EndLoop: "EndLoop", cycle.Wait: "Wait", cycle.Again: "Again", cycle.AskModel: "AskModel", cycle.Weigh: "Weigh", cycle.RunIt: "RunIt"}[then]
		if name == "" || !strings.Contains(string(b), fmt.Sprintf("cycle.%s", name)) {
			t.Errorf("the loop in round.go does not handle NextMove's %q", then)
		}
	}
}
