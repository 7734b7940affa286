package wake

import (
	"context"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentd/agentd/api"
	"github.com/agentd/agentd/commands/shell"
	"github.com/agentd/agentd/commands/web"
	"github.com/agentd/agentd/daemon/store"
	"github.com/agentd/agentd/internal/shelltest"
)

// rig is an engine over a store in a temp folder, as the daemon would have them.
type rig struct {
	t     testing.TB
	st    *store.Store
	path  string // the store's file
	dir   string // the engine's folder
	e     *Engine
	fetch *web.Fetcher
	// timeout is the engine's Options.Timeout (0: the default); set it, then restart.
	timeout time.Duration
}

// newRig returns a rig whose fetcher may reach loopback (the tests' own servers) unless
// guarded.
func newRig(t testing.TB, guarded bool) *rig {
	t.Helper()
	r := &rig{t: t, path: filepath.Join(t.TempDir(), "agentd.db"), dir: filepath.Join(t.TempDir(), "wake")}
	r.fetch = &web.Fetcher{AllowPrivate: !guarded, Resolver: loopbackOnly}
	r.open()
	t.Cleanup(func() { r.close() })
	return r
}

func (r *rig) open() {
	r.t.Helper()
	st, err := store.Open(context.Background(), r.path)
	if err != nil {
		r.t.Fatal(err)
	}
	e, err := New(Options{Store: st, Dir: r.dir, Fetcher: r.fetch, Timeout: r.timeout})
	if err != nil {
		r.t.Fatal(err)
	}
	r.st, r.e = st, e
}

func (r *rig) close() {
	if r.e != nil {
		r.e.Close()
		r.st.Close()
		r.e, r.st = nil, nil
	}
}

// restart closes the engine and the store and opens them again, as a daemon restart does.
func (r *rig) restart() {
	r.close()
	r.open()
}

// schedule stores a schedule row (the state's foreign key) and returns its id.
func (r *rig) schedule(id string) string {
	r.t.Helper()
	row := &store.Schedule{Schedule: api.Schedule{ID: id, Name: strings.ToLower(id), Spec: "* * * * *", Template: "t", Goal: "g",
		Autonomy: api.Autonomy{Mode: "ask"}, Delivery: "agentctl", Concurrency: "skip", Missed: "skip"}}
	if err := r.st.Tx(context.Background(), func(tx *store.Tx) error { return tx.InsertSchedule(row) }); err != nil {
		r.t.Fatal(err)
	}
	return id
}

// fire checks a schedule's conditions, and starts its run (Started) when the verdict wakes.
func (r *rig) fire(id string, c Conditions, t Target) *Verdict {
	r.t.Helper()
	v := r.e.Check(context.Background(), id, c, t)
	if v.Wake {
		if err := r.e.Started(context.Background(), v); err != nil {
			r.t.Fatal(err)
		}
	}
	return v
}

// state reads a schedule's stored wake state.
func (r *rig) state(id string) *store.WakeState {
	r.t.Helper()
	var w *store.WakeState
	err := r.st.View(context.Background(), func(tx *store.Tx) (err error) { w, err = tx.WakeState(id); return err })
	if err != nil {
		r.t.Fatal(err)
	}
	return w
}

// loopbackOnly resolves every name to 127.0.0.1: nothing a test fetches leaves the machine,
// whatever the guard does.
func loopbackOnly(context.Context, string) ([]netip.Addr, error) {
	return []netip.Addr{netip.MustParseAddr("127.0.0.1")}, nil
}

// workspace returns a fresh folder with its symlinks resolved, as the daemon stores
// workspaces.
func workspace(t testing.TB) string {
	t.Helper()
	ws, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return ws
}

// watching is an unguarded rig with schedule id made, and a fresh workspace holding
// files (slash path → content).
func watching(t testing.TB, id string, files map[string]string) (*rig, string, string) {
	r, ws := newRig(t, false), workspace(t)
	for f, content := range files {
		write(t, filepath.Join(ws, filepath.FromSlash(f)), content)
	}
	return r, r.schedule(id), ws
}

func write(t testing.TB, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// sandboxShell returns an execute_shell under bwrap, or skips the test.
func sandboxShell(t testing.TB) shell.Checker { return shelltest.Sandboxed(t) }
