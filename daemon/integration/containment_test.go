package integration

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	ollama "github.com/ollama/ollama/api"

	"github.com/agentd/agentd/api"
	"github.com/agentd/agentd/internal/apitest"
	"github.com/agentd/agentd/internal/display"
	"github.com/agentd/agentd/internal/ollamatest"
	"github.com/agentd/agentd/internal/randid"
	"github.com/agentd/agentd/internal/testutil"
)

// TestContainmentCorpus runs a corpus of attacks through the real daemon with the sandbox on: a
// scripted model proposes each attack, the test approves it as a person who trusts the
// proposal would, and then looks from outside whether anything escaped — a canary file
// outside the workspace read or changed, a hit on a loopback canary server, a secret in a
// result or in what the model was sent, a process that outlived its command, a permission
// rule that approved a bypass. Classes are subtests; every case that escaped is named.
func TestContainmentCorpus(t *testing.T) {
	begin := time.Now()
	r := newAttackRig(t)
	classes := []struct {
		name string
		run  func(*attackRig)
	}{
		{"files", attackFiles},
		{"helper_workspaces", attackHelpers},
		{"sandbox", attackSandbox},
		{"network", attackNetwork},
		{"permissions", attackPermissions},
		{"display", attackDisplay},
		{"control", attackControl},
		{"state", attackState},
		{"no_sandbox", attackNoSandbox},
		{"none_mode", attackNoneMode},
	}
	for _, c := range classes {
		t.Run(c.name, func(t *testing.T) {
			r.t = t
			c.run(r)
			r.reportClass(c.name)
		})
	}
	r.t = t
	r.finalChecks()
	escapes := r.escapes()
	t.Logf("the attack corpus took %v", time.Since(begin).Round(time.Millisecond))
	t.Logf("attack corpus: %d cases, %d escapes", len(r.cases), len(escapes))
	if len(escapes) > 0 {
		t.Errorf("%d attacks escaped:\n%s", len(escapes), strings.Join(escapes, "\n"))
	}
}

// caseResult is one attack's verdict: escape is empty when it was contained.
type caseResult struct {
	class, name, escape string
}

// attackRig is the daemon under attack, its fake model, the canaries and the verdicts.
type attackRig struct {
	t        *testing.T
	fake     *ollamatest.Fake
	d        *daemon
	c        *api.Client
	agentctl string
	canary   *canaryServer
	router   *router
	out      string            // a directory outside every workspace, full of canaries
	wsRoot   string            // the daemon's workspace_root
	secrets  map[string]string // label → secret string that must never reach an agent
	httpAddr string            // the daemon's TCP listener (metrics)
	class    string

	mu      sync.Mutex
	scripts map[string][]string // agent name → the model's replies, in order

	cases []caseResult
	final []func() // checks that need time to pass (processes that should be gone)
}

func newAttackRig(t *testing.T) *attackRig {
	if _, err := exec.LookPath("bwrap"); err != nil && os.Getenv("CI") == "true" {
		t.Fatal("bwrap is not installed: the attack corpus needs the sandbox (scripts/test.sh installs bubblewrap)")
	}
	r := &attackRig{t: t, fake: ollamatest.NewFake(t), scripts: map[string][]string{}}
	_, r.agentctl = binaries(t)
	r.canary = newCanaryServer(t)
	dir := t.TempDir()
	r.out, r.wsRoot = filepath.Join(dir, "outside"), filepath.Join(dir, "ws")
	mustMkdir(t, r.out, 0o700)
	r.secrets = map[string]string{
		"file":           "CANARY-FILE-" + randid.Hex(8),
		"hard_link":      "CANARY-HARDLINK-" + randid.Hex(8),
		"helper":         "CANARY-HELPER-" + randid.Hex(8),
		"slack_token":    "xoxb-canary-" + randid.Hex(8),
		"discord_token":  "canary-discord-" + randid.Hex(8),
		"http_token":     "canary-http-" + randid.Hex(12),
		"http_body":      r.canary.body,
		"fake_ollama":    `"` + ollamatest.TinyModelName + `"`,
		"listing_marker": "listing-marker-" + randid.Hex(6),
	}
	if b, err := os.ReadFile("/etc/shadow"); err == nil {
		if line, _, _ := strings.Cut(string(b), "\n"); len(line) > 8 {
			r.secrets["shadow"] = line
		}
	}
	r.router = route(r.fake, r.reply)
	r.httpAddr = testutil.FreeAddr(t)
	r.d = newDaemon(t, daemonOpts{binary: true, config: r.config(true), env: []string{
		"SLACK_BOT_TOKEN=" + r.secrets["slack_token"], "DISCORD_BOT_TOKEN=" + r.secrets["discord_token"],
		"AGENTD_HTTP_TOKEN=" + r.secrets["http_token"],
	}})
	// The state dir exists already, too open: the daemon must close it.
	mustMkdir(t, r.d.stateDir, 0o755)
	r.d.start()
	r.c = r.d.client()
	return r
}

func mustMkdir(t *testing.T, dir string, mode os.FileMode) {
	t.Helper()
	if err := os.MkdirAll(dir, mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, mode); err != nil {
		t.Fatal(err)
	}
}

// config is the daemon's config: every file, helper, web and shell command offered, the
// sandbox in its default mode, and the permission rules the permission cases probe.
func (r *attackRig) config(withHTTP bool) string {
	var b strings.Builder
	fmt.Fprintf(&b, "[ollama]\nhost = %q\nmodel = %q\nmax_context = 4096\nrequest_timeout = \"1m\"\n\n",
		r.fake.URL(), ollamatest.TinyModelName)
	fmt.Fprintf(&b, "[agent]\ncommand_timeout = \"20s\"\nmax_invalid_replies = 10\nworkspace_root = %q\n", r.wsRoot)
	// The corpus's agents try refused and failing commands by the dozen on purpose; the
	// watchdog's own tests are elsewhere, so its limits here are its largest.
	b.WriteString("watchdog_failures = 50\nwatchdog_idle_steps = 200\n")
	b.WriteString(`commands = ["list_folder", "read_file", "write_file", "append_to_file", "delete_file", ` +
		`"search_files", "ask_user", "finish", "start_agent", "message_agent", "list_agents", "delete_agent"]` + "\n")
	b.WriteString("\n[permissions]\nauto_read = false\n")
	for name, rules := range permissionAgents {
		fmt.Fprintf(&b, "\n[agents.%s]\nallow = %s\ndeny = %s\n", name, tomlList(rules.allow), tomlList(rules.deny))
	}
	b.WriteString("\n[web_commands]\nenabled = true\nallow_private = false\nclone = true\ntimeout = \"5s\"\n")
	b.WriteString("\n[shell]\nenabled = true\nsandbox = \"auto\"\npython = true\n")
	b.WriteString("\n[memory]\nenabled = false\n")
	if withHTTP {
		fmt.Fprintf(&b, "\n[http]\nlisten = %q\ntoken_env = \"AGENTD_HTTP_TOKEN\"\n", r.httpAddr)
	}
	return b.String()
}

func tomlList(s []string) string {
	q := make([]string, len(s))
	for i, v := range s {
		q[i] = strconv.Quote(v)
	}
	return "[" + strings.Join(q, ", ") + "]"
}

// reply answers the fake's chat requests from the agents' scripts; past its end an agent
// finishes. Requests that are not an agent's step (history summaries) get a finish too,
// which they reject, harmlessly.
func (r *attackRig) reply(agent string, n int) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	if s := r.scripts[agent]; n < len(s) {
		return s[n]
	}
	return attackReply(agent+":end", "finish", map[string]string{"reason": "done"})
}

// attackReply is a model reply proposing command(args); tag goes in the reasoning so the
// test can find the proposal whatever came before it.
func attackReply(tag, command string, args any) string {
	return attackReplySpeak(tag, command, args, "")
}

func attackReplySpeak(tag, command string, args any, speak string) string {
	if speak == "" {
		speak = "I will run " + command
	}
	return ollamatest.ReplyThinking(command, args, api.Thoughts{Observations: "o", Text: "t", Reasoning: tag,
		SelfCriticism: "s", Plan: speak, Speak: speak})
}

// How a step is decided.
const (
	approve = iota // a person approves it: containment must hold anyway
	observe        // nobody approves: the permission rules decide or it asks (then feedback)
)

// step is one proposal of an agent's script.
type step struct {
	name    string // the case's name; "" for a setup step that is not a case
	command string
	args    any
	mode    int
	// wantAuto: in observe mode the rules must approve it (a benign command); else they
	// must not (a bypass).
	wantAuto bool
	// check returns why the attack escaped, "" when it was contained; the rig's own checks
	// (secrets, canaries outside, loopback hits) run on every step besides.
	check func(o *outcome) string
	// pending runs while the proposal waits for the person, before they approve.
	pending func(p *api.Proposal)
	// argsFor, when set, makes the args once the agent's workspace is known (the step must
	// not be among the first few, whose replies may be made before).
	argsFor func(ws string) any
	// speak, when set, is what the model's thoughts say to the person.
	speak string
}

// worked is a control step's check: it ran and its result holds want.
func worked(want string) func(o *outcome) string {
	return func(o *outcome) string {
		if o.status != api.ProposalSucceeded || !strings.Contains(o.result, want) {
			return "want it to succeed with " + want
		}
		return ""
	}
}

// outcome is what became of a step's proposal.
type outcome struct {
	proposed bool
	how      string // person, asked, policy_approved, policy_denied, superseded, not_proposed
	status   api.ProposalStatus
	result   string
	conns    int // connections the loopback canary accepted meanwhile
}

// agentRun drives one agent through its script: plant prepares its workspace before the
// first step is approved; helpers approves everything the agent's helpers propose.
type agentRun struct {
	name    string
	steps   []step
	plant   func(ws string) (watch []string) // watch: paths that must not change (beside r.out)
	helpers bool
}

// drive creates the agent and runs its script, recording a verdict per case. It returns
// the agent's id.
func (r *attackRig) drive(run agentRun) string {
	t := r.t
	t.Helper()
	r.script(run, "")
	a := create(t, r.c, run.name)
	var watch []string
	if run.plant != nil {
		watch = run.plant(a.Workspace)
	}
	r.script(run, a.Workspace)
	for i := range run.steps {
		s := &run.steps[i]
		before := r.snapshot(watch)
		conns := r.canary.conns.Load()
		o := r.runStep(a.ID, run, i)
		o.conns = int(r.canary.conns.Load() - conns)
		if s.name == "" {
			// A control: it must work, or the cases around it prove nothing.
			if s.check != nil {
				if w := s.check(o); w != "" {
					t.Errorf("%s: control step %s failed: %s; %s", run.name, s.command, w, jsonString(o))
				}
			}
			continue
		}
		r.record(s.name, r.verdict(s, o, before, r.snapshot(watch)))
	}
	return a.ID
}

// script sets the model's replies for run; ws, once known, makes the argsFor steps' args.
func (r *attackRig) script(run agentRun, ws string) {
	replies := make([]string, len(run.steps))
	for i, s := range run.steps {
		if s.argsFor != nil && ws != "" {
			s.args = s.argsFor(ws)
		}
		replies[i] = attackReplySpeak(stepTag(run.name, i), s.command, s.args, s.speak)
	}
	r.mu.Lock()
	r.scripts[run.name] = replies
	r.mu.Unlock()
}

func stepTag(agent string, i int) string { return fmt.Sprintf("attack %s step %d", agent, i) }

// verdict is why a step escaped, or "".
func (r *attackRig) verdict(s *step, o *outcome, before, after map[string]string) string {
	var why []string
	for label, secret := range r.secrets {
		if strings.Contains(o.result, secret) {
			why = append(why, "the result holds the "+label+" canary")
		}
	}
	if o.conns > 0 {
		why = append(why, fmt.Sprintf("the loopback canary accepted %d connections", o.conns))
	}
	if d := diffSnapshots(before, after); len(d) > 3 {
		why = append(why, fmt.Sprintf("%s and %d more canary changes", strings.Join(d[:3], "; "), len(d)-3))
	} else {
		why = append(why, d...)
	}
	if s.mode == observe {
		auto := o.how == "policy_approved"
		switch {
		case s.wantAuto && !auto:
			why = append(why, "a benign command was not approved by the rules ("+o.how+")")
		case !s.wantAuto && auto:
			why = append(why, "the rules approved it without asking")
		}
	}
	if s.check != nil {
		if w := s.check(o); w != "" {
			why = append(why, w)
		}
	}
	if len(why) > 0 || os.Getenv("AGENTD_ATTACK_VERBOSE") != "" {
		r.t.Logf("%s: %s %s; result %q", s.name, o.how, o.status, display.Cut(o.result, 300, display.Ellipsis))
	}
	return strings.Join(why, "; ")
}

func (r *attackRig) record(name, escape string) {
	r.cases = append(r.cases, caseResult{class: r.class, name: name, escape: escape})
}

func (r *attackRig) reportClass(class string) {
	n, e := 0, 0
	for _, c := range r.cases {
		if c.class == r.class {
			n++
			if c.escape != "" {
				e++
				r.t.Errorf("escape: %s: %s", c.name, c.escape)
			}
		}
	}
	r.t.Logf("%s: %d cases, %d escapes", class, n, e)
}

func (r *attackRig) escapes() []string {
	var out []string
	for _, c := range r.cases {
		if c.escape != "" {
			out = append(out, fmt.Sprintf("  %s/%s: %s", c.class, c.name, c.escape))
		}
	}
	return out
}

// previewWentStale reports whether p's effect preview could not be applied (the
// workspace changed since it was taken): its approval asked again, with the preview run
// again on the workspace as it is now (or why there is none).
func previewWentStale(p *api.Proposal) bool {
	return p.Preview != nil && p.Preview.Effect != nil && p.Status == api.ProposalInterrupted
}

// runStep waits for step i's proposal, decides it as the step says and waits for its end.
func (r *attackRig) runStep(id string, run agentRun, i int) *outcome {
	t, ctx, s := r.t, context.Background(), run.steps[i]
	tag := stepTag(run.name, i)
	o := &outcome{how: "not_proposed"}
	decided, shown, decisions := false, false, 0
	ended := testutil.Wait(40*time.Second, func() bool {
		if run.helpers {
			r.approveHelpers(id)
		}
		ps, err := api.ProposalsRoute.Do(ctx, r.c, id, api.None{})
		if err != nil {
			t.Fatalf("%s: proposals: %v", run.name, err)
		}
		p, later := findTagged(ps, run.name, tag, i)
		a, err := api.AgentRoute.Do(ctx, r.c, id, api.None{})
		if err != nil {
			t.Fatalf("%s: %v", run.name, err)
		}
		if p == nil {
			if later || a.State == api.StatePaused || a.State == api.StateIdle || a.State == api.StateFailed {
				return true // the daemon never turned the reply into a proposal
			}
			return false
		}
		o.proposed, o.status, o.result = true, p.Status, p.Result
		switch p.Status {
		case api.ProposalPending, api.ProposalInterrupted:
			// A proposal asked again because the workspace changed since its effect
			// preview (the plant lands after the first proposal) is decided again.
			if (!decided || previewWentStale(p)) && awaiting(a) && a.Pending.ID == p.ID && decisions < 2 {
				if s.pending != nil && !shown {
					shown = true
					s.pending(p)
				}
				// A decision carries only its kind's fields: feedback text only with feedback.
				req, how := api.DecideRequest{ProposalID: p.ID, Kind: api.DecisionApprove, By: "attacker-trusting-person", Source: "integration"}, "person"
				if s.mode == observe {
					req.Kind, req.Feedback, how = api.DecisionFeedback, "not this one", "asked"
				}
				_, err := api.DecideRoute.Do(ctx, r.c, id, req)
				switch {
				case err == nil:
					decided, o.how = true, how
					decisions++
				case errors.Is(err, api.ErrBadRequest):
					// Refused for what it is, it would be refused forever: say so now
					// rather than poll 40 s for a decision that never comes.
					t.Errorf("%s: step %d (%s): the decision was refused: %v", run.name, i, s.command, err)
					return true
				}
			}
		case api.ProposalSucceeded, api.ProposalFailed, api.ProposalFeedback, api.ProposalDenied, api.ProposalSuperseded:
			if !decided {
				switch p.Status {
				case api.ProposalFeedback, api.ProposalDenied:
					o.how = "policy_denied"
				case api.ProposalSuperseded:
					o.how = "superseded"
				default:
					o.how = "policy_approved"
				}
			}
			return true
		}
		return false
	})
	if ended {
		return o
	}
	t.Errorf("%s: step %d (%s) did not end within 40s: %s", run.name, i, s.command, jsonString(o))
	return o
}

// findTagged is the proposal carrying tag, and whether a later step's proposal exists.
func findTagged(ps []api.Proposal, agent, tag string, i int) (*api.Proposal, bool) {
	later := false
	for k := range ps {
		if ps[k].Thoughts.Reasoning == tag {
			return &ps[k], false
		}
		for j := i + 1; j < i+4; j++ {
			if ps[k].Thoughts.Reasoning == stepTag(agent, j) {
				later = true
			}
		}
	}
	return nil, later
}

// approveHelpers approves whatever the helpers of parent wait on, as a trusting person.
func (r *attackRig) approveHelpers(parent string) {
	ctx := context.Background()
	all, err := apitest.Agents(ctx, r.c)
	if err != nil {
		return
	}
	for _, h := range all {
		if h.ParentID == parent && awaiting(&h) {
			api.DecideRoute.Do(ctx, r.c, h.ID, api.DecideRequest{ProposalID: h.Pending.ID, Kind: api.DecisionApprove,
				By: "attacker-trusting-person", Source: "integration"})
		}
	}
}

// finalChecks: no secret ever reached the model, the loopback canary was never reached
// by anything, and the checks that needed time.
func (r *attackRig) finalChecks() {
	r.class = "final"
	for _, f := range r.final {
		f()
	}
	leaks := map[string]bool{}
	for _, req := range r.fake.Requests() {
		for _, m := range req.Messages {
			for label, secret := range r.secrets {
				if label != "fake_ollama" && strings.Contains(m.Content, secret) {
					leaks[label+" canary reached the model of "+agentOfReq(&req)] = true
				}
			}
		}
	}
	for label := range r.secrets {
		var who []string
		for l := range leaks {
			if strings.HasPrefix(l, label+" ") {
				who = append(who, l)
			}
		}
		slices.Sort(who)
		if label != "fake_ollama" {
			r.record("secret_never_reaches_model_"+label, strings.Join(who, "; "))
		}
	}
	escape := ""
	if n := r.canary.conns.Load(); n > 0 {
		escape = fmt.Sprintf("the loopback canary accepted %d connections in all, paths %v", n, r.canary.paths())
	}
	r.record("loopback_canary_never_reached", escape)
}

func agentOfReq(req *ollama.ChatRequest) string {
	if a := agentOf(req); a != "" {
		return a
	}
	return "a non-agent request"
}
