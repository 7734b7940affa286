package agent

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/agentd/agentd/api"
	"github.com/agentd/agentd/daemon/llm"
	"github.com/agentd/agentd/internal/backoff"
	"github.com/agentd/agentd/internal/testutil"
)

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
