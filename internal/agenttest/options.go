package agenttest

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/agentd/agentd/daemon/agent"
	"github.com/agentd/agentd/daemon/config"
	"github.com/agentd/agentd/daemon/llm"
	"github.com/agentd/agentd/daemon/store"
)

// OpenStore opens the store agentd.db in dir, closed when the test ends.
func OpenStore(t testing.TB, dir string) *store.Store {
	t.Helper()
	st, err := store.Open(context.Background(), filepath.Join(dir, "agentd.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// Options are the options of a supervisor over st, its state in dir, as the front ends'
// tests start it: the daemon's defaults without directives and agent budget (the tests
// were written without them), model served at modelURL offering commands, and model
// retries 20 ms apart.
func Options(t testing.TB, st *store.Store, dir, modelURL, model string, commands ...string) agent.Options {
	t.Helper()
	lc, err := llm.New(modelURL, nil)
	if err != nil {
		t.Fatal(err)
	}
	opt := agent.OptionsOf(config.Default())
	opt.Constraints, opt.Resources, opt.BestPractices = nil, nil, nil
	// No agent budget: the tests that bound agents set their own.
	opt.MaxSteps, opt.MaxTokens, opt.MaxTime, opt.MaxDisk = 0, 0, config.Duration{}, 0
	opt.Model, opt.Commands = model, commands
	opt.Store, opt.LLM, opt.StateDir = st, lc, dir
	opt.Backoff = func(int) time.Duration { return 20 * time.Millisecond }
	return opt
}
