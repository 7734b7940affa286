package web

import (
	"context"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The wake conditions are checked as they are typed, through the spec's check endpoint,
// by the daemon's own check of their form; what the person typed comes back as text.
func TestWhenCheck(t *testing.T) {
	e := newEnv(t)
	b := e.browser()
	b.login(e)
	tests := []struct {
		name string
		form url.Values
		want []string
	}{
		{"none", url.Values{}, []string{`class="ok"`, "every firing wakes the model"}},
		{"changed_and_url", url.Values{"when_changed": {"inbox\n notes/ \n"}, "when_url": {"https://example.com/feed"}, "when_combine": {"all"}},
			[]string{`class="ok"`, "wakes the model when --when-changed inbox --when-changed notes --when-url https://example.com/feed --when-all"}},
		{"command_and_policy", url.Values{"when": {"test -s inbox/new"}, "when_failed": {"wake"}, "when_failed_after": {"5"}},
			[]string{`class="ok"`, "--when &#39;test -s inbox/new&#39; --when-failed wake --when-failed-after 5"}},
		{"command_with_network", url.Values{"when": {"curl -fs https://example.com/feed"}, "when_network": {"on"}},
			[]string{`class="ok"`, "--when-network"}},
		{"network_without_a_command", url.Values{"when_changed": {"inbox"}, "when_network": {"on"}}, []string{`class="bad"`, "--when-network lets the --when commands reach the network"}},
		{"path_leaves", url.Values{"when_changed": {"../etc"}}, []string{`class="bad"`, "leaves the workspace"}},
		{"url_scheme", url.Values{"when_url": {"file:///etc/passwd"}}, []string{`class="bad"`, "only http and https"}},
		{"all_without_conditions", url.Values{"when_combine": {"all"}}, []string{`class="bad"`, "none is given"}},
		{"bad_count", url.Values{"when_changed": {"inbox"}, "when_failed_after": {"many"}}, []string{`class="bad"`, "whole number"}},
		{"hostile_path_is_text", url.Values{"when_changed": {"<script>alert(1)</script>"}}, []string{"&lt;script&gt;"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.form.Set("part", "when")
			got := b.get("/schedules/check?" + tt.form.Encode())
			must(t, got.StatusCode == 200, "status %d", got.StatusCode)
			for _, w := range tt.want {
				must(t, strings.Contains(got.Body, w), "%v does not say %q:\n%s", tt.form, w, got.Body)
			}
			must(t, !strings.Contains(got.Body, "<script>"), "a raw script tag:\n%s", got.Body)
		})
	}
}

// The form's conditions reach the schedule, the check command's network too, and the
// daemon's checks against the agent (a path that does not exist) refuse it with their
// reason.
func TestAddScheduleWithConditions(t *testing.T) {
	e := newEnv(t)
	b := e.browser()
	b.login(e)
	csrf := b.csrf()
	a := e.create("watcher")
	form := url.Values{"csrf": {csrf}, "name": {"triage"}, "spec": {"0 9 * * *"}, "agent": {a.ID}, "goal": {"triage"}, "when_changed": {"inbox"}}
	got := b.post("/schedules", form)
	must(t, strings.Contains(got.Body, "not added: when: --when-changed inbox: it does not exist"), "a missing path was not refused:\n%s", got.Body)
	must(t, os.MkdirAll(filepath.Join(a.Workspace, "inbox"), 0o755) == nil, "mkdir")
	got = b.post("/schedules", form)
	must(t, strings.Contains(got.Body, "added triage"), "not added:\n%s", got.Body)
	s, err := e.mgr.Schedule(context.Background(), "triage")
	must(t, err == nil && s.When != nil && s.When.Changed[0] == "inbox", "schedule: %+v, %v", s, err)

	// The check command may be given the network, as agentctl's and chat's --when-network do.
	w, err := whenOf(url.Values{"when": {"curl -fs https://example.com/feed"}, "when_network": {"on"}})
	must(t, err == nil && w != nil && w.Network, "the form's network box does not reach the conditions: %+v, %v", w, err)
}
