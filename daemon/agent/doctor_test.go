package agent

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentd/agentd/api"
	"github.com/agentd/agentd/daemon/config"
	"github.com/agentd/agentd/daemon/llm"
	"github.com/agentd/agentd/daemon/statedir"
	"github.com/agentd/agentd/internal/backoff"
	"github.com/agentd/agentd/internal/ollamatest"
	"github.com/agentd/agentd/internal/testutil"
)

func TestDoctor(t *testing.T) {
	h := newHarness(t, func(o *Options) {
		o.Model = "qwen3:8b" // the harness's tiny model is noise, and doctor warns of it
		o.Checkpoints.On = true
		o.HealthChecks = []HealthCheck{func(context.Context) []api.Check {
			return []api.Check{{Name: "extra", Status: api.CheckOK, Detail: "called"}}
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
			if c.Status != api.CheckOK && c.Fix == "" && c.Name != "disk" {
				t.Errorf("%s is %s with no fix: %s", c.Name, c.Status, c.Detail)
			}
		}
		return strings.Join(parts, " ")
	}
	// The harness made its files under umask 022, as an old agentd would have: private
	// ones are what agentd leaves at start.
	h.privateState(t)
	h.fake.SetModels("qwen3:8b", "smart")
	if got, want := summary(), "ollama:ok model:ok store:ok disk:ok state dir:ok workspaces:ok extra:ok checkpoints:ok"; got != want {
		t.Errorf("healthy: %s\nwant     %s", got, want)
	}
	// A 2,048-token context is usable, with a warning.
	h.fake.SetContextLength(2048)
	if got, want := summary(), "ollama:ok model:warn store:ok disk:ok state dir:ok workspaces:ok extra:ok checkpoints:ok"; got != want {
		t.Errorf("small context: %s\nwant           %s", got, want)
	}
	h.fake.SetModels("some-other-model")
	if got, want := summary(), "ollama:ok model:fail store:ok disk:ok state dir:ok workspaces:ok extra:ok checkpoints:ok"; got != want {
		t.Errorf("model missing: %s\nwant          %s", got, want)
	}
	h.fake.SetDown(true)
	if got, want := summary(), "ollama:fail store:ok disk:ok state dir:ok workspaces:ok extra:ok checkpoints:ok"; got != want {
		t.Errorf("ollama down: %s\nwant         %s", got, want)
	}
	// A state dir opened up since the start fails, with the chmod that fixes it.
	if err := os.Chmod(h.dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if got, want := summary(), "ollama:fail store:ok disk:ok state dir:fail workspaces:ok extra:ok checkpoints:ok"; got != want {
		t.Errorf("state dir 0755: %s\nwant            %s", got, want)
	}
	rep, _ := h.sup.doctor.Doctor(context.Background())
	for _, c := range rep.Checks {
		if c.Name == "state dir" && (!strings.Contains(c.Fix, "chmod 700 "+h.dir) || !strings.Contains(c.Detail, "mode 0755")) {
			t.Errorf("state dir check: %s; fix: %s", c.Detail, c.Fix)
		}
	}
	// A store others can read fails as the store, not only as the state dir.
	db := filepath.Join(h.dir, "agentd.db")
	if err := os.Chmod(db, 0o644); err != nil {
		t.Fatal(err)
	}
	if got, want := summary(), "ollama:fail store:fail disk:ok state dir:fail workspaces:ok extra:ok checkpoints:ok"; got != want {
		t.Errorf("agentd.db 0644: %s\nwant             %s", got, want)
	}
}

// TestDoctorFailsOnOpenModes: real files with real modes. A state dir, a database, its
// WAL or shared-memory file, or any file in the state dir that group or others may use
// fails, naming the path, its mode and the chmod that fixes it; private ones pass.
func TestDoctorFailsOnOpenModes(t *testing.T) {
	for _, tc := range []struct {
		name  string
		modes map[string]os.FileMode // under the state dir; "" is the dir itself
		store string                 // the store check's status, then what its detail and fix name
		dir   string                 // the state dir check's, likewise
	}{
		{"private", map[string]os.FileMode{}, "ok", "ok"},
		{"db_world_readable", map[string]os.FileMode{"agentd.db": 0o644},
			"fail agentd.db has mode 0644|chmod 600 $/agentd.db", "fail agentd.db has mode 0644|chmod 600 $/agentd.db"},
		{"wal_group_writable", map[string]os.FileMode{"agentd.db-wal": 0o620},
			"fail agentd.db-wal has mode 0620|chmod 600 $/agentd.db-wal", "fail 0620|chmod 600 $/agentd.db-wal"},
		{"shm_others_read", map[string]os.FileMode{"agentd.db-shm": 0o604},
			"fail agentd.db-shm has mode 0604|chmod 600 $/agentd.db-shm", "fail 0604|chmod 600 $/agentd.db-shm"},
		{"dir_group_listable", map[string]os.FileMode{"": 0o750},
			"ok", "fail $ has mode 0750|chmod 700 $ "},
		{"memory_index_readable", map[string]os.FileMode{"memory/index.bin": 0o640},
			"ok", "fail index.bin has mode 0640|chmod 600 $/memory/index.bin"},
		{"dir_and_db", map[string]os.FileMode{"": 0o755, "agentd.db": 0o666},
			"fail agentd.db has mode 0666|chmod 600 $/agentd.db", "fail $ has mode 0755, $/agentd.db 0666|chmod 700 $; chmod 600 $/agentd.db"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "state")
			files := []string{"agentd.db", "agentd.db-wal", "agentd.db-shm", "memory/index.bin"}
			if err := os.MkdirAll(filepath.Join(dir, "memory"), 0o700); err != nil {
				t.Fatal(err)
			}
			for _, f := range files {
				if err := os.WriteFile(filepath.Join(dir, f), []byte("x"), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			os.Chmod(dir, 0o700)
			for f, mode := range tc.modes {
				if err := os.Chmod(filepath.Join(dir, f), mode); err != nil {
					t.Fatal(err)
				}
			}
			judge := func(what string, c api.Check, want string) {
				t.Helper()
				status, names, _ := strings.Cut(strings.ReplaceAll(want, "$", dir), " ")
				if c.Status != status {
					t.Errorf("%s check is %s, want %s: %s; fix: %s", what, c.Status, status, c.Detail, c.Fix)
				}
				if names == "" {
					return
				}
				inDetail, inFix, _ := strings.Cut(names, "|")
				if !strings.Contains(c.Detail, inDetail) || !strings.Contains(c.Fix+" ", inFix) {
					t.Errorf("%s check\n detail: %s\n fix:    %s\nwant them to name %q and %q", what, c.Detail, c.Fix, inDetail, inFix)
				}
			}
			judge("store", storeCheck(filepath.Join(dir, "agentd.db"), nil), tc.store)
			judge("state dir", checkStateDir(dir, filepath.Join(dir, "workspaces")), tc.dir)
		})
	}
	// A broken store still says it is open too, and both fixes.
	dir := t.TempDir()
	db := filepath.Join(dir, "agentd.db")
	os.WriteFile(db, nil, 0o644)
	os.Chmod(db, 0o644)
	c := storeCheck(db, errors.New("database disk image is malformed"))
	if c.Status != api.CheckFail || !strings.Contains(c.Detail, "malformed") || !strings.Contains(c.Detail, "mode 0644") || !strings.Contains(c.Fix, "chmod 600 "+db) {
		t.Errorf("broken and open store: %+v", c)
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

func TestTinyModelNameMatchesHarness(t *testing.T) {
	if tinyModelName != ollamatest.TinyModelName {
		t.Fatalf("tinyModelName = %q, ollamatest.TinyModelName = %q: doctor would not recognise the test model", tinyModelName, ollamatest.TinyModelName)
	}
}

// Doctor warns when the configured model is the offline tiny model: it answers noise.
func TestModelCheckWarnsOnTinyModel(t *testing.T) {
	tests := []struct {
		name   string
		info   llm.ModelInfo
		status string
		noise  bool
	}{
		{"tiny_model_warns", llm.ModelInfo{Model: "agentd-tiny", ContextLength: 8192}, api.CheckWarn, true},
		{"tiny_model_tagged_warns", llm.ModelInfo{Model: "agentd-tiny:latest", ContextLength: 8192}, api.CheckWarn, true},
		{"tiny_model_short_context_says_noise", llm.ModelInfo{Model: "agentd-tiny", ContextLength: 256}, api.CheckWarn, true},
		{"real_model_ok", llm.ModelInfo{Model: "qwen3:8b", ContextLength: 8192}, api.CheckOK, false},
		{"similar_name_ok", llm.ModelInfo{Model: "agentd-tiny-real", ContextLength: 8192}, api.CheckOK, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := modelCheck(&tt.info, 0)
			if c.Status != tt.status {
				t.Errorf("status = %s, want %s (%+v)", c.Status, tt.status, c)
			}
			if got := strings.Contains(c.Detail, "noise"); got != tt.noise {
				t.Errorf("detail %q: mentions noise = %v, want %v", c.Detail, got, tt.noise)
			}
			// The model it suggests is the one run.sh and the README use.
			if tt.noise && (!strings.Contains(c.Fix, "[ollama] model") || !strings.Contains(c.Fix, "ollama pull "+config.DefaultModel)) {
				t.Errorf("fix %q does not name [ollama] model and ollama pull %s", c.Fix, config.DefaultModel)
			}
		})
	}
}

// Status reports when the server was last heard from, so a cached "reachable" shows its age.
func TestModelStatusCarriesCheckedAt(t *testing.T) {
	m := &modelState{model: "m"}
	if st := m.status(); !st.CheckedAt.IsZero() {
		t.Fatalf("checked_at %v before any probe, want zero", st.CheckedAt)
	}
	before := time.Now()
	m.probedOK("m", &llm.ModelInfo{Model: "m"})
	if st := m.status(); !st.Reachable || st.CheckedAt.Before(before) {
		t.Errorf("after a good probe: reachable %v, checked_at %v, want reachable and at or after %v", st.Reachable, st.CheckedAt, before)
	}
	before = time.Now()
	m.failed(errors.Join(llm.ErrUnavailable, errors.New("connection refused")))
	if st := m.status(); st.Reachable || st.CheckedAt.Before(before) {
		t.Errorf("after a failed probe: reachable %v, checked_at %v, want unreachable and at or after %v", st.Reachable, st.CheckedAt, before)
	}
}

// An agent waiting for the model resumes when the pool finds its host back, not when its
// own backoff ends: here the backoff is an hour, so only the wake-up can resume it.
func TestAgentResumesWhenItsModelsHostComesBack(t *testing.T) {
	h := newHarness(t, func(o *Options) {
		pc, err := llm.NewPool(llm.PoolOptions{Hosts: []llm.HostConfig{{URL: o.LLM.Host()}},
			Backoff: backoff.Policy{Base: 20 * time.Millisecond, Max: 50 * time.Millisecond}, Refresh: time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(pc.Close)
		o.LLM = pc
		o.Backoff = func(int) time.Duration { return time.Hour }
	})
	h.fake.SetDown(true)
	a := h.create(api.CreateAgentRequest{})
	h.waitFor(a.ID, "waiting_for_model", func(a *api.Agent) bool { return a.State == api.StateWaitingForModel })
	h.fake.Script(reply("list_folder", map[string]string{"path": "."}))
	h.fake.SetDown(false)
	p := h.pending(a.ID)
	if p.Command != "list_folder" {
		t.Errorf("pending %s, want the scripted list_folder", p.Command)
	}
}

// Status asked after the model server died says so at once, with the cause and when it
// was seen, instead of the minute-old "reachable" of the last probe.
func TestStatusAsksTheModelServerAgainWhenItsWordIsOld(t *testing.T) {
	h := newHarness(t, func(o *Options) {
		pc, err := llm.NewPool(llm.PoolOptions{Hosts: []llm.HostConfig{{URL: o.LLM.Host()}}, Refresh: time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(pc.Close)
		o.LLM = pc
	})
	ctx := context.Background()
	testutil.Eventually(t, 10*time.Second, "the first probe's answer", func() bool {
		st, err := h.sup.agentViews.Status(ctx)
		return err == nil && st.Ollama.Reachable
	})
	h.sup.agentViews.fresh = 0 // every status asks: the test does not wait for an answer to age
	died := time.Now()
	h.fake.Close()
	st, err := h.sup.agentViews.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	o := st.Ollama
	if o.Reachable || !strings.Contains(o.Error, "connection refused") || o.CheckedAt.Before(died) {
		t.Errorf("status after the server died: reachable %v, error %q, checked at %v (died at %v)", o.Reachable, o.Error, o.CheckedAt, died)
	}
	if len(o.Hosts) != 1 || o.Hosts[0].Up || o.Hosts[0].CheckedAt.Before(died) {
		t.Errorf("the pool's host after the server died: %+v", o.Hosts)
	}
}

func TestHostChecks(t *testing.T) {
	up := llm.HostStatus{URL: "http://a:11434", Up: true, Slots: 4, Busy: 1, Served: 9, Models: []string{"m:latest"}}
	down := llm.HostStatus{URL: "http://b:11434", Slots: 2, RetryIn: 3 * time.Second, Error: "connection refused"}
	for _, tc := range []struct {
		name  string
		hosts []llm.HostStatus
		want  []string
		parts []string // each must be in some check's detail or fix
	}{
		{"one_host_says_nothing_more", []llm.HostStatus{up}, nil, nil},
		{"all_up", []llm.HostStatus{up, {URL: "http://c:11434", Up: true, Slots: 1}}, []string{api.CheckOK, api.CheckOK},
			[]string{"http://a:11434 up, 1 of 4 slots busy, 9 calls served; models: m:latest"}},
		{"one_down_warns", []llm.HostStatus{up, down}, []string{api.CheckOK, api.CheckWarn},
			[]string{"http://b:11434 down (next try in 3s): connection refused", "ollama serve", "[[ollama.hosts]]"}},
		{"all_down_fails", []llm.HostStatus{down, down}, []string{api.CheckFail, api.CheckFail}, nil},
		{"model_it_cannot_run_warns", []llm.HostStatus{up, {URL: "http://c:11434", Up: true, Slots: 1,
			Failing: []llm.ModelFailing{{Model: "big:70b", RetryIn: 2 * time.Second, Error: "HTTP 500: out of memory"}}}},
			[]string{api.CheckOK, api.CheckWarn},
			[]string{"cannot run big:70b now (next try in 2s): HTTP 500: out of memory", "server's log"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := hostChecks(&llm.PoolStatus{Hosts: tc.hosts})
			if len(got) != len(tc.want) {
				t.Fatalf("%d checks, want %d: %+v", len(got), len(tc.want), got)
			}
			var all strings.Builder
			for i, c := range got {
				if c.Status != tc.want[i] {
					t.Errorf("check %d: %s, want %s (%s)", i, c.Status, tc.want[i], c.Detail)
				}
				all.WriteString(c.Detail + "\n" + c.Fix + "\n")
			}
			for _, p := range tc.parts {
				if !strings.Contains(all.String(), p) {
					t.Errorf("checks do not say %q:\n%s", p, all.String())
				}
			}
		})
	}
}

func TestPoolStatusConverts(t *testing.T) {
	hosts, queue := poolStatus(&llm.PoolStatus{
		Hosts: []llm.HostStatus{{URL: "u", Slots: 2, RetryIn: 1500 * time.Millisecond, Error: "e", Configured: true, Models: []string{"m"},
			Failing: []llm.ModelFailing{{Model: "m", RetryIn: time.Second, Error: "oom"}}}},
		Queue: []llm.ClassStatus{{Class: "batch", Queued: 3, Served: 7, WaitP50: 2 * time.Millisecond, WaitP99: 1500 * time.Microsecond}},
	})
	if h := hosts[0]; h.URL != "u" || h.Up || h.Slots != 2 || h.RetryInMS != 1500 || h.Error != "e" || !h.ModelsConfigured || len(h.Models) != 1 {
		t.Errorf("host %+v", h)
	}
	if f := hosts[0].Failing; len(f) != 1 || f[0] != (api.OllamaModelFailing{Model: "m", RetryInMS: 1000, Error: "oom"}) {
		t.Errorf("failing models %+v", f)
	}
	if q := queue[0]; q.Class != "batch" || q.Queued != 3 || q.Served != 7 || q.WaitP50MS != 2 || q.WaitP99MS != 1.5 {
		t.Errorf("queue %+v", q)
	}
	if h, q := poolStatus(nil); h != nil || q != nil {
		t.Error("no pool: want no hosts and no queue")
	}
}
