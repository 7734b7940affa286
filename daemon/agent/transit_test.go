package agent

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
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
