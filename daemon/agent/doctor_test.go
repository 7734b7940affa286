package agent

import (
	"context"
	"strings"
	"testing"

	"github.com/agentd/agentd/daemon/client"
)

func TestDoctor(t *testing.T) {
	h := newHarness(t, func(o *Options) {
		o.HealthChecks = []HealthCheck{func(context.Context) []client.Check {
			return []client.Check{{Name: "extra", Status: client.CheckOK, Detail: "called"}}
		}}
	})
	summary := func() string {
		rep, err := h.sup.Doctor(context.Background())
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
	if got, want := summary(), "ollama:ok model:ok store:ok disk:ok workspaces:ok extra:ok"; got != want {
		t.Errorf("healthy: %s\nwant     %s", got, want)
	}
	// A 2,048-token context is usable, with a warning.
	h.fake.SetContextLength(2048)
	if got, want := summary(), "ollama:ok model:warn store:ok disk:ok workspaces:ok extra:ok"; got != want {
		t.Errorf("small context: %s\nwant           %s", got, want)
	}
	h.fake.SetModels("some-other-model")
	if got, want := summary(), "ollama:ok model:fail store:ok disk:ok workspaces:ok extra:ok"; got != want {
		t.Errorf("model missing: %s\nwant          %s", got, want)
	}
	h.fake.SetDown(true)
	if got, want := summary(), "ollama:fail store:ok disk:ok workspaces:ok extra:ok"; got != want {
		t.Errorf("ollama down: %s\nwant         %s", got, want)
	}
}
