package team

import (
	"os"
	"path/filepath"
	"testing"
)

// The shipped examples parse and are what their comments say: a ChatDev-shaped software
// company (design → code → review → test) and a research report, with roles that use
// commands and composed review loops.
func TestExamplesAreValid(t *testing.T) {
	files, err := filepath.Glob("../../examples/teams/*.toml")
	if err != nil || len(files) != 2 {
		t.Fatalf("examples: %v, %v", files, err)
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			src, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			w, err := Parse(filepath.Base(f), src)
			if err != nil {
				t.Fatal(err)
			}
			commandRoles, composed, model := 0, 0, 0
			for _, r := range w.Roles {
				if len(r.Commands) > 0 {
					commandRoles++
				}
			}
			for _, p := range w.Phases {
				if p.Composed() {
					composed++
				}
			}
			for _, s := range w.States {
				if s.Choose == "model" {
					model++
				}
			}
			if commandRoles == 0 || composed == 0 || model == 0 {
				t.Errorf("%s: %d roles with commands, %d composed phases, %d model choices: want each", w.Name, commandRoles, composed, model)
			}
		})
	}
	src, _ := os.ReadFile("../../examples/teams/software_company.toml")
	w, err := Parse("software_company.toml", src)
	if err != nil {
		t.Fatal(err)
	}
	// design → code → review → test, the ChatDev shape.
	for s, next := "design", []string{"code", "review", "test"}; len(next) > 0; s, next = next[0], next[1:] {
		if got := w.States[s].Next[0].State; got != next[0] {
			t.Errorf("%s's first next is %s, want %s", s, got, next[0])
		}
	}
}
