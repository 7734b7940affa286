package agent

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentd/agentd/daemon/client"
	"github.com/agentd/agentd/daemon/statedir"
)

func TestDoctor(t *testing.T) {
	h := newHarness(t, func(o *Options) {
		o.HealthChecks = []HealthCheck{func(context.Context) []client.Check {
			return []client.Check{{Name: "extra", Status: client.CheckOK, Detail: "called"}}
		}}
	})
	summary := func() string {
		rep, err := h.sup.doctor.Doctor(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		var parts []string
		for _, c := range rep.Checks {
			parts = append(parts, c.Name+":"+c.Status)
			if c.Status != client.CheckOK && c.Fix == "" && c.Name != "disk" {
				t.Errorf("%s is %s with no fix: %s", c.Name, c.Status, c.Detail)
			}
		}
		return strings.Join(parts, " ")
	}
	// The harness made its files under umask 022, as an old agentd would have: private
	// ones are what agentd leaves at start.
	h.privateState(t)
	if got, want := summary(), "ollama:ok model:ok store:ok disk:ok state dir:ok workspaces:ok extra:ok"; got != want {
		t.Errorf("healthy: %s\nwant     %s", got, want)
	}
	// A 2,048-token context is usable, with a warning.
	h.fake.SetContextLength(2048)
	if got, want := summary(), "ollama:ok model:warn store:ok disk:ok state dir:ok workspaces:ok extra:ok"; got != want {
		t.Errorf("small context: %s\nwant           %s", got, want)
	}
	h.fake.SetModels("some-other-model")
	if got, want := summary(), "ollama:ok model:fail store:ok disk:ok state dir:ok workspaces:ok extra:ok"; got != want {
		t.Errorf("model missing: %s\nwant          %s", got, want)
	}
	h.fake.SetDown(true)
	if got, want := summary(), "ollama:fail store:ok disk:ok state dir:ok workspaces:ok extra:ok"; got != want {
		t.Errorf("ollama down: %s\nwant         %s", got, want)
	}
	// A state dir opened up since the start fails, with the chmod that fixes it.
	if err := os.Chmod(h.dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if got, want := summary(), "ollama:fail store:ok disk:ok state dir:fail workspaces:ok extra:ok"; got != want {
		t.Errorf("state dir 0755: %s\nwant            %s", got, want)
	}
	rep, _ := h.sup.doctor.Doctor(context.Background())
	for _, c := range rep.Checks {
		if c.Name == "state dir" && (!strings.Contains(c.Fix, "chmod go-rwx "+h.dir) || !strings.Contains(c.Detail, "mode 0755")) {
			t.Errorf("state dir check: %s; fix: %s", c.Detail, c.Fix)
		}
	}
}

// privateState makes the harness's state dir what agentd's start leaves: 0700 and 0600.
func (h *harness) privateState(t *testing.T) {
	t.Helper()
	open, err := statedir.Check(h.dir, filepath.Join(h.dir, "workspaces"), 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range open {
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, fi.Mode().Perm()&0o700); err != nil {
			t.Fatal(err)
		}
	}
}
