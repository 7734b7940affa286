package team

import (
	"strings"
	"testing"

	"github.com/agentd/agentd/daemon/store"
)

// TestRolePromptReadsOnAfterItsName: a role's description follows "You are NAME, "
// mid-sentence, as an agent's does: no capital after the comma, no stop before ", in a
// team".
func TestRolePromptReadsOnAfterItsName(t *testing.T) {
	tests := []struct {
		name, desc, want string
	}{
		{"article_lowered", "An engineer who writes Go.", `You are cto, an engineer who writes Go, in a team following the workflow "pair".`},
		{"lowercase_unchanged", "chooses the technology", `You are cto, chooses the technology, in a team following the workflow "pair".`},
		{"acronym_kept", "NASA's reviewer", `You are cto, NASA's reviewer, in a team following the workflow "pair".`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			role := &Role{Name: "cto", Description: tt.desc}
			ph := &Phase{Name: "design", Instructor: "ceo", Assistant: "cto", Prompt: "design it"}
			got := system(&store.TeamRun{}, &Workflow{Name: "pair"}, &State{Name: "s"}, ph, role, "ceo")
			if first, _, _ := strings.Cut(got, "\n"); first != tt.want {
				t.Errorf("first line = %q, want %q", first, tt.want)
			}
		})
	}
}
