package cli

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/agentd/agentd/api"
	"github.com/agentd/agentd/internal/display"
)

// Limits on what one line of terminal output shows.
const (
	argValueMax   = 60 // characters of one argument value in command(args)
	resultLines   = 5  // lines of a command's result
	resultLineMax = 160
)

// formatCall renders a command and its args as `name(key="value", n=3)`, keys sorted and
// long values shortened, so one proposal fits on one line.
func formatCall(name string, args json.RawMessage) string {
	var m map[string]json.RawMessage
	if len(bytes.TrimSpace(args)) == 0 || string(bytes.TrimSpace(args)) == "null" {
		return line(name) + "()"
	}
	if err := json.Unmarshal(args, &m); err != nil {
		return line(name) + "(" + truncate(compactJSON(args), argValueMax) + ")"
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = line(k) + "=" + truncate(compactJSON(m[k]), argValueMax)
	}
	return line(name) + "(" + strings.Join(parts, ", ") + ")"
}

func compactJSON(raw json.RawMessage) string {
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		return string(raw)
	}
	return b.String()
}

// truncate shortens s to at most n characters on one line, marking the cut with "…".
func truncate(s string, n int) string { return cutRunes(oneParagraph(s), n) }

// cutRunes shortens s to at most n characters, marking the cut with "…".
func cutRunes(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}

// writeResult writes the first lines (resultLines) of an episode's result, each indented
// and shortened, and says how many more there were: the one layout of a result under its
// step (history, replay) or its result line (follow), after the line head when it is not
// empty. A run command says it had no output; an episode that ran nothing (denied,
// feedback) shows no result.
func writeResult(w io.Writer, ep *api.Episode, head, indent string) {
	if ep.Result == "" && ep.Outcome != "succeeded" && ep.Outcome != "failed" {
		return
	}
	if head != "" {
		fmt.Fprintln(w, head)
	}
	text, n := strings.TrimRight(ep.Result, "\n"), resultLines
	if strings.TrimSpace(text) == "" {
		fmt.Fprintf(w, "%s(no output)\n", indent)
		return
	}
	lines := strings.Split(text, "\n")
	for i, l := range lines {
		if i == n {
			fmt.Fprintf(w, "%s… %d more lines\n", indent, len(lines)-n)
			return
		}
		fmt.Fprintf(w, "%s%s\n", indent, cutRunes(strings.TrimRight(l, "\r"), resultLineMax))
	}
}

// writeThoughts writes the parts of a proposal's reasoning that are present.
func writeThoughts(w io.Writer, t api.Thoughts, indent string, full bool) {
	field := func(label, v string) {
		if v = strings.TrimSpace(v); v != "" {
			fmt.Fprintf(w, "%s%s %s\n", indent, label, oneParagraph(v))
		}
	}
	field("says:", t.Speak)
	if full {
		field("observations:", t.Observations)
		field("thinking:", t.Text)
	}
	field("reasoning:", t.Reasoning)
	if full {
		field("self-criticism:", t.SelfCriticism)
	}
	if plan := strings.TrimSpace(t.Plan); plan != "" {
		fmt.Fprintf(w, "%splan:\n", indent)
		for _, l := range strings.Split(plan, "\n") {
			if l = strings.TrimSpace(l); l != "" {
				fmt.Fprintf(w, "%s  %s\n", indent, l)
			}
		}
	}
}

func oneParagraph(s string) string { return strings.Join(strings.Fields(s), " ") }

// line shows s on one line whatever it holds: model text put in a table cell or after a
// label must not start a line of its own (the writer on stdout escapes everything else).
func line(s string) string { return display.Escape(s, display.Line) }

func policyString(p api.Policy) string {
	switch p.Mode {
	case "", "ask":
		if p.AutoSteps > 0 {
			return fmt.Sprintf("ask (next %d run without asking)", p.AutoSteps)
		}
		return "ask before every command"
	case "auto":
		return fmt.Sprintf("auto (next %d run without asking)", p.AutoSteps)
	case "continuous":
		if p.ContinuousLimit > 0 {
			return "continuous (up to " + display.Count(p.ContinuousLimit, "step", "steps") + ")"
		}
		return "continuous"
	}
	return p.Mode
}

func stateString(a *api.Agent) string {
	if why := a.ShownReason(); why != "" {
		return fmt.Sprintf("%s: %s", line(string(a.State)), line(why))
	}
	return line(string(a.State))
}

func formatTime(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.Local().Format("2006-01-02 15:04:05")
}

func decisionString(d *api.Decision) string {
	var s string
	switch d.Kind {
	case api.DecisionApprove:
		s = "approved"
		if d.Count > 1 {
			s += fmt.Sprintf(" (and the next %d)", d.Count-1)
		}
	case api.DecisionDeny:
		s = "denied"
	case api.DecisionFeedback:
		s = "feedback"
	default:
		s = string(d.Kind)
	}
	// A chat user by their display name, not their id.
	by := cmp.Or(line(cmp.Or(d.ByName, d.By)), "someone")
	if d.Source == "grant" { // an automatic approval names its grant: "by root's y -3 (1 of 2 left)"
		s += " by " + line(d.GrantText())
	} else if d.Source == "policy" {
		s += " by policy (" + line(d.By) + ")"
	} else if d.Source != "" {
		s += fmt.Sprintf(" by %s via %s", by, line(d.Source))
	} else {
		s += " by " + by
	}
	if d.Grant != "" && d.Source != "grant" {
		s += " [grant " + line(d.Grant) + "]" // the grant the decision made: y -N, y!
	}
	if p := api.ProfileText(d.Profile); p != "" {
		s += ", runs " + p
	}
	if d.Feedback != "" {
		s += ": " + oneParagraph(d.Feedback)
	}
	return s
}

// writeProposal writes what a proposal says and would do, as show and follow print it:
// every thought, the call, long arguments in full (at most argLines lines a value; 0:
// all) and the effect preview (at most diffLines lines of diff; 0: all).
func writeProposal(w io.Writer, p *api.Proposal, argLines, diffLines int) {
	writeThoughts(w, p.Thoughts, "  ", true)
	fmt.Fprintf(w, "  → %s\n", formatCall(p.Command, p.Args))
	if longArgs(p.Args) {
		fmt.Fprintln(w, "  arguments:")
		writeArgs(w, p.Args, "    ", argLines)
	}
	writePreview(w, p.Preview, "  ", diffLines)
}

// longArgs reports whether formatCall shortens args, so the full args should be shown too.
func longArgs(args json.RawMessage) bool {
	var m map[string]json.RawMessage
	if json.Unmarshal(args, &m) != nil {
		return len(compactJSON(args)) > argValueMax
	}
	for _, v := range m {
		if s := compactJSON(v); len([]rune(s)) > argValueMax || strings.Contains(s, `\n`) {
			return true
		}
	}
	return false
}

// writeArgs writes each argument on its own lines, strings unquoted with their line
// breaks, at most maxLines lines per value (0: all).
func writeArgs(w io.Writer, args json.RawMessage, indent string, maxLines int) {
	var m map[string]json.RawMessage
	if json.Unmarshal(args, &m) != nil {
		fmt.Fprintf(w, "%s%s\n", indent, compactJSON(args))
		return
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		var s string
		if json.Unmarshal(m[k], &s) != nil {
			fmt.Fprintf(w, "%s%s: %s\n", indent, line(k), compactJSON(m[k]))
			continue
		}
		if !strings.Contains(s, "\n") {
			fmt.Fprintf(w, "%s%s: %s\n", indent, line(k), line(s))
			continue
		}
		fmt.Fprintf(w, "%s%s:\n", indent, line(k))
		lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
		for i, l := range lines {
			if maxLines > 0 && i == maxLines {
				fmt.Fprintf(w, "%s  … %d more lines\n", indent, len(lines)-maxLines)
				break
			}
			fmt.Fprintln(w, strings.TrimRight(indent+"  "+l, " \t"))
		}
	}
}

// nextProposals is "proposal" or "N proposals", after "the next".
func nextProposals(n int) string {
	if n == 1 {
		return "proposal"
	}
	return display.Count(n, "proposal", "proposals")
}

// table starts the aligned columns every listing prints, two spaces apart, with its
// header line when there is one.
func table(w io.Writer, header ...string) *tabwriter.Writer {
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	for _, h := range header {
		fmt.Fprintln(tw, h)
	}
	return tw
}
