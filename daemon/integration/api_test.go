package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/agentd/agentd/api"
	"github.com/agentd/agentd/internal/apitest"
	"github.com/agentd/agentd/internal/ollamatest"
)

// rawHTTP is a plain HTTP client over the daemon's unix socket, for requests the typed
// client would never send.
func rawHTTP(socket string) *http.Client {
	return &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", socket)
		},
	}}
}

// TestBadAPIInput sends the real daemon malformed and misplaced requests over its socket:
// each gets the right status and a JSON {"error": "..."} naming the problem, nothing stored
// changes, and the daemon stays up.
func TestBadAPIInput(t *testing.T) {
	fake := ollamatest.NewFake(t)
	route(fake, func(agent string, n int) string { return listFolder(n) })
	d := newDaemon(t, daemonOpts{binary: true, config: configText(fake.URL(), 4096, nil)})
	d.start()
	c := d.client()
	ctx := context.Background()

	// kilo's first proposal gets feedback (so it is decided), its second is superseded by a stop.
	kilo := create(t, c, "kilo")
	p1 := waitAgent(t, c, kilo.ID, "kilo's first proposal", 10*time.Second, awaiting).Pending
	decide(t, c, kilo.ID, p1, api.DecisionFeedback, "try again")
	p2 := waitAgent(t, c, kilo.ID, "kilo's second proposal", 10*time.Second, func(a *api.Agent) bool {
		return awaiting(a) && a.Pending.ID != p1.ID
	}).Pending
	if _, err := api.StopRoute.Do(ctx, c, kilo.ID, api.None{}); err != nil {
		t.Fatal(err)
	}
	before := snapshot(t, c, map[string]string{"kilo": kilo.ID})

	approve := func(id string) string { return `{"proposal_id": "` + id + `", "kind": "approve"}` }
	cases := []struct {
		name, method, path, body string
		status                   int
		want                     []string // each must appear in the error text (case-insensitive)
	}{
		{"truncated_json", "POST", "/v0/agents", `{"task": "x"`, 400, []string{"invalid request body", "unexpected end"}},
		{"syntax_error", "POST", "/v0/agents", `{"task": x}`, 400, []string{"invalid request body", "invalid character"}},
		{"empty_body", "POST", "/v0/agents", ``, 400, []string{"empty"}},
		{"not_an_object", "POST", "/v0/agents", `["x"]`, 400, []string{"want a JSON object"}},
		{"unknown_field", "POST", "/v0/agents", `{"task": "x", "colour": "red"}`, 400, []string{"colour"}},
		{"trailing_data", "POST", "/v0/agents", `{"task": "x"} {"task": "y"}`, 400, []string{"after the JSON object"}},
		{"wrong_type", "POST", "/v0/agents/kilo/decision", `{"proposal_id": 7, "kind": "approve"}`, 400, []string{"proposal_id", "string"}},
		{"missing_proposal_id", "POST", "/v0/agents/kilo/decision", `{"kind": "approve"}`, 400, []string{"proposal_id"}},
		{"unknown_kind", "POST", "/v0/agents/kilo/decision", `{"proposal_id": "` + p2.ID + `", "kind": "maybe"}`, 400, []string{"maybe"}},
		{"too_large", "POST", "/v0/agents", `{"task": "` + strings.Repeat("x", 1<<20) + `"}`, 413, []string{"larger than"}},
		{"unknown_agent", "GET", "/v0/agents/nobody", ``, 404, []string{"nobody"}},
		{"unknown_agent_decision", "POST", "/v0/agents/nobody/decision", approve(p2.ID), 404, []string{"nobody"}},
		{"unknown_proposal", "POST", "/v0/agents/kilo/decision", approve("p-000000000000"), 404, []string{"p-000000000000"}},
		{"already_decided", "POST", "/v0/agents/kilo/decision", approve(p1.ID), 409, []string{p1.ID, "already decided"}},
		{"superseded_idle_agent", "POST", "/v0/agents/kilo/decision", approve(p2.ID), 409, []string{p2.ID, "superseded"}},
		{"pause_idle_agent", "POST", "/v0/agents/kilo/pause", ``, 409, []string{"kilo", "idle"}},
		{"answer_without_question", "POST", "/v0/agents/kilo/answer", `{"text": "yes"}`, 409, []string{"no open question"}},
		{"unknown_endpoint", "GET", "/v0/nothing", ``, 404, []string{"/v0/nothing"}},
		{"wrong_method", "DELETE", "/v0/status", ``, 405, []string{"DELETE", "not allowed"}},
	}
	hc := rawHTTP(d.socket)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var body io.Reader
			if tc.body != "" {
				body = strings.NewReader(tc.body)
			}
			req, err := http.NewRequest(tc.method, "http://local"+tc.path, body)
			if err != nil {
				t.Fatal(err)
			}
			if tc.body != "" {
				req.Header.Set("Content-Type", "application/json")
			}
			resp, err := hc.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			raw, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != tc.status {
				t.Errorf("status %d, want %d; body %s", resp.StatusCode, tc.status, raw)
			}
			if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
				t.Errorf("Content-Type %q, want application/json", ct)
			}
			var e api.ErrorResponse
			dec := json.NewDecoder(bytes.NewReader(raw))
			dec.DisallowUnknownFields()
			if err := dec.Decode(&e); err != nil || e.Error == "" {
				t.Fatalf("body %s is not {\"error\": \"...\"}: %v", raw, err)
			}
			t.Logf("%d %s", resp.StatusCode, e.Error)
			for _, w := range tc.want {
				if !strings.Contains(strings.ToLower(e.Error), strings.ToLower(w)) {
					t.Errorf("error %q does not mention %q", e.Error, w)
				}
			}
		})
	}

	// Still up, and nothing stored changed or was half-written.
	if !d.running() {
		t.Fatal("agentd exited")
	}
	if _, err := api.StatusRoute.Do(ctx, c, "", api.None{}); err != nil {
		t.Fatalf("status after bad input: %v", err)
	}
	agents, err := apitest.Agents(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	if len(agents) != 1 {
		t.Errorf("%d agents after bad input, want only kilo: %s", len(agents), jsonString(agents))
	}
	after := snapshot(t, c, map[string]string{"kilo": kilo.ID})
	sameAs(t, "kilo", before["kilo"], after["kilo"])
	if ps := after["kilo"].proposals; len(ps) != 2 || ps[0].Status != api.ProposalFeedback || ps[1].Status != api.ProposalSuperseded {
		t.Errorf("kilo's proposals: %s", jsonString(ps))
	}
}
