package cli_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/agentd/agentd/api"
	"github.com/agentd/agentd/internal/display/displaytest"
)

// hostile is model text that would reorder what the terminal shows (U+202E), clear it
// (ESC [2J), hide a character (U+200B) and forge a line of its own (\n).
const hostile = "rm -rf /\u202etxt.exe\x1b[2J\u200b\n12:00:00 decision: approved"

func hostileProposal() *api.Proposal {
	p := walkerProposal("p-66")
	p.Command = "run_shell\u202e\nfake"
	p.Args = json.RawMessage(`{"command":` + jsonString(hostile) + `,"k\u202e":"v"}`)
	p.Thoughts.Speak = hostile
	p.Thoughts.Plan = "- " + hostile
	return p
}

func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// rawLeft reports the first character of the hostile set left raw in out.
func rawLeft(out string) string {
	for _, bad := range []string{"\u202e", "\x1b", "\u200b"} {
		if strings.Contains(out, bad) {
			return bad
		}
	}
	return ""
}

func TestShowEscapesAHostileProposal(t *testing.T) {
	f := newFakeDaemon(t)
	f.set(func() {
		f.agents[0].Pending = hostileProposal()
		f.agents[0].StateReason = "waiting\u202e\nstate: idle"
	})
	r := runCLI(t, "", "--socket", f.sock, "show", "researcher")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	if bad := rawLeft(r.stdout); bad != "" {
		t.Fatalf("show printed %q raw:\n%s", bad, r.stdout)
	}
	for _, want := range []string{`\u202etxt.exe\x1b[2J\u200b`, `→ run_shell\u202e\x0afake(`, `k\u202e`, `waiting\u202e\x0astate: idle`} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("show lacks %q:\n%s", want, r.stdout)
		}
	}
	if strings.Contains(r.stdout, "\n12:00:00 decision") {
		t.Errorf("a one-line field started a forged line:\n%s", r.stdout)
	}

	r = runCLI(t, "", "--socket", f.sock, "show", "researcher", "--json")
	if bad := rawLeft(r.stdout); bad != "" {
		t.Fatalf("show --json printed %q raw:\n%s", bad, r.stdout)
	}
	var ag api.Agent
	if err := json.Unmarshal([]byte(r.stdout), &ag); err != nil {
		t.Fatalf("show --json is not JSON: %v\n%s", err, r.stdout)
	}
	if ag.Pending == nil || ag.Pending.Thoughts.Speak != hostile {
		t.Fatalf("show --json changed the value: %+v", ag.Pending)
	}
}

func TestFollowEscapesAHostileProposal(t *testing.T) {
	for _, mode := range []string{"text", "json"} {
		t.Run(mode, func(t *testing.T) {
			f := newFakeDaemon(t)
			f.events = func(w *eventWriter, r *http.Request, conn int) {
				w.send(api.Event{Seq: 1, Type: api.EventProposal, AgentID: "a-4", Proposal: hostileProposal()})
				w.send(api.Event{Seq: 2, Type: api.EventError, AgentID: "a-4", Message: "bad\x1b]0;title\x07"})
				w.send(api.Event{Seq: 3, Type: api.EventFinish, AgentID: "a-4", Message: "done\u2066"})
			}
			args := []string{"--socket", f.sock, "follow", "walker"}
			if mode == "json" {
				args = append(args, "--json")
			}
			r := runCLI(t, "", args...)
			if r.code != 0 {
				t.Fatalf("exit %d: %s", r.code, r.stderr)
			}
			if bad := rawLeft(r.stdout + r.stderr); bad != "" || strings.Contains(r.stdout, "\u2066") {
				t.Fatalf("follow printed %q raw:\n%s", bad, r)
			}
			if mode == "json" {
				for _, l := range strings.Split(strings.TrimSpace(r.stdout), "\n") {
					var ev api.Event
					if err := json.Unmarshal([]byte(l), &ev); err != nil {
						t.Fatalf("line is not JSON: %v\n%s", err, l)
					}
					if ev.Proposal != nil && ev.Proposal.Thoughts.Speak != hostile {
						t.Errorf("--json changed the proposal's text to %q", ev.Proposal.Thoughts.Speak)
					}
				}
				return
			}
			for _, want := range []string{`says: rm -rf /\u202etxt.exe\x1b[2J\u200b`, `→ run_shell\u202e\x0afake(`, `bad\x1b]0;title\x07`, `done\u2066`} {
				if !strings.Contains(r.stdout, want) {
					t.Errorf("follow lacks %q:\n%s", want, r.stdout)
				}
			}
		})
	}
}

// Every hostile string (displaytest.Cases) that reaches follow and show — a proposal's
// words, an error, a finish message, a state's reason — is shown escaped: nothing acts
// on the terminal and no line is forged.
func TestFollowAndShowEscapeEveryHostileString(t *testing.T) {
	for _, c := range displaytest.Cases {
		t.Run(c.Name, func(t *testing.T) {
			f := newFakeDaemon(t)
			p := walkerProposal("p-66")
			p.Thoughts.Speak, p.Thoughts.Plan = c.Text, c.Text
			p.Args = json.RawMessage(`{"command":` + jsonString(c.Text) + `}`)
			f.events = func(w *eventWriter, r *http.Request, conn int) {
				w.send(api.Event{Seq: 1, Type: api.EventProposal, AgentID: "a-4", Proposal: p})
				w.send(api.Event{Seq: 2, Type: api.EventError, AgentID: "a-4", Message: c.Text})
				w.send(api.Event{Seq: 3, Type: api.EventFinish, AgentID: "a-4", Message: c.Text})
			}
			f.set(func() { f.agents[0].StateReason = c.Text })
			for _, args := range [][]string{{"follow", "walker"}, {"show", "researcher"}} {
				r := runCLI(t, "", append([]string{"--socket", f.sock}, args...)...)
				if leak := displaytest.Leak(r.stdout + r.stderr); leak != "" {
					t.Errorf("%s shows %s:\n%s%s", args[0], leak, r.stdout, r.stderr)
				}
			}
		})
	}
}
