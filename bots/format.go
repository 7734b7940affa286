package bots

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/agentd/agentd/api"
	"github.com/agentd/agentd/internal/display"
)

// Limits of what a message shows inline; chat platforms cap message sizes well above.
const (
	maxArgsShown = 1500
	maxPlanShown = 300
	maxSpeak     = 600
)

// ProposalView is what a proposal message shows: the proposal, and once known, its
// decision or why it can no longer be decided.
type ProposalView struct {
	Proposal *api.Proposal
	Decision *api.Decision
	// Closed says why the buttons are gone without a decision ("expired…", "superseded").
	Closed string
	// ApproveN is N on the Approve ×N button (0 or 1 leaves that button out).
	ApproveN int
	// GrantSource is where the grant that made Decision was made (slack, agentctl…); ""
	// when unknown. Only a grant made on the platform shown names its maker as a mention.
	GrantSource string
}

// askedAgainNote ends the message of a proposal asked again (interrupted, or its preview
// gone stale and run again): what it shows is the proposal as it is asked now.
const askedAgainNote = "Asked again: this message shows it as it is now; a diff or arguments file attached before is out of date."

// FormatProposal builds the proposal message for platform (decisions made there show
// their maker as a mention).
func FormatProposal(v ProposalView, platform string) Message {
	p := v.Proposal
	var m Message
	if s := strings.TrimSpace(p.Thoughts.Speak); s != "" {
		m.Parts = append(m.Parts, Part{Quote: true, Spans: []Span{{Text: cut(s, maxSpeak)}}})
	}
	if plan := shortPlan(p.Thoughts.Plan); plan != "" {
		m.Parts = append(m.Parts, Part{Spans: []Span{{Text: "Plan:", Bold: true}}}, Part{Quote: true, Spans: []Span{{Text: plan}}})
	}
	m.Parts = append(m.Parts,
		Part{Spans: []Span{{Text: fmt.Sprintf("Step %d: ", p.Step)}, {Text: p.Command, Bold: true}}},
		Part{Code: FormatArgs(p.Args)})
	if full := prettyArgs(p.Args); len(full) > maxArgsShown {
		// Said in prose, outside the code block, so no platform's cut can take it away.
		m.Parts = append(m.Parts, Part{Spans: []Span{{Text: fmt.Sprintf("Full arguments (%d bytes) attached.", len(full))}}})
	}
	m.Parts = append(m.Parts, PreviewParts(p)...)
	if p.Status == api.ProposalInterrupted {
		// Its message is edited in place; files uploaded after it cannot be.
		m.Parts = append(m.Parts, Part{Spans: []Span{{Text: askedAgainNote, Bold: true}}})
	}
	m.Summary = fmt.Sprintf("Step %d: %s wants to run %s", p.Step, p.AgentID, p.Command)
	switch {
	case v.Decision != nil:
		m.Parts = append(m.Parts, Part{Spans: DecisionSpans(v.Decision, platform, v.GrantSource)})
	case v.Closed != "":
		m.Parts = append(m.Parts, Part{Spans: []Span{{Text: v.Closed}}})
	case p.Status.Decidable():
		ref := Ref{AgentID: p.AgentID, ProposalID: p.ID}
		if r := p.Ref(); len(r) >= HashLen {
			ref.Hash = r[:HashLen] // the decision names what was shown, its effect preview too
		}
		m.Buttons = append(m.Buttons, Button{Action: ActionApprove, Label: "Approve", Ref: ref, Style: "primary"})
		if v.ApproveN > 1 {
			r := ref
			r.Count = v.ApproveN
			m.Buttons = append(m.Buttons, Button{Action: ActionApproveN, Label: fmt.Sprintf("Approve ×%d", v.ApproveN), Ref: r, Count: v.ApproveN})
		}
		m.Buttons = append(m.Buttons,
			Button{Action: ActionDeny, Label: "Deny", Ref: ref, Style: "danger"},
			Button{Action: ActionFeedback, Label: "Feedback…", Ref: ref})
		m.Parts = append(m.Parts, Part{Spans: []Span{{Text: "Reply in this thread: y, y -N, n, or feedback (? for help)."}}})
	}
	return m
}

// PreviewParts shows what the proposal would do (api.Preview.Render, the rendering
// agentctl shows too): its lines, then the first api.PreviewDiffLines lines of a diff
// as code; when more is left out, a note that the full diff is attached (PreviewFile).
func PreviewParts(p *api.Proposal) []Part { return previewParts(p.Preview, "Preview: ") }

// previewParts is pv as PreviewParts shows it, its lines after the bold label.
func previewParts(pv *api.Preview, label string) []Part {
	lines, diff := pv.Render()
	if len(lines) == 0 && diff == "" {
		return nil
	}
	parts := []Part{{Spans: []Span{{Text: label, Bold: true}, {Text: strings.Join(lines, "\n")}}}}
	if diff == "" {
		return parts
	}
	head, cut := api.HeadLines(diff, api.PreviewDiffLines)
	parts = append(parts, Part{Code: head})
	if cut {
		more := strings.Count(diff, "\n") + 1 - api.PreviewDiffLines
		parts = append(parts, Part{Spans: []Span{{Text: fmt.Sprintf("… %d more diff lines: full diff attached.", more)}}})
	}
	return parts
}

// PreviewFile returns the file to attach to a proposal message whose diff PreviewParts
// cut, and its name (step-3-write_file.diff); "" when the whole diff is shown inline.
func PreviewFile(p *api.Proposal) (name, content string) {
	return diffFile(p.Preview, fmt.Sprintf("step-%d-%s", p.Step, p.Command))
}

// diffFile returns pv's whole diff as the file base.diff when previewParts cut it; ""
// when it is shown whole.
func diffFile(pv *api.Preview, base string) (name, content string) {
	_, diff := pv.Render()
	if _, cut := api.HeadLines(diff, api.PreviewDiffLines); !cut {
		return "", ""
	}
	return base + ".diff", diff + "\n"
}

// ArgsFile returns the file to attach to a proposal message whose arguments
// FormatProposal cut, and its name (step-3-write_file-args.json); "" when they are shown
// whole. A person approves the whole command, so the whole of it must be one click away.
func ArgsFile(p *api.Proposal) (name, content string) {
	full := prettyArgs(p.Args)
	if len(full) <= maxArgsShown {
		return "", ""
	}
	return fmt.Sprintf("step-%d-%s-args.json", p.Step, p.Command), full + "\n"
}

// DecisionSpans says what was decided and by whom on platform; grantSource is where the
// grant that made an automatic approval was made ("" when unknown).
func DecisionSpans(d *api.Decision, platform, grantSource string) []Span {
	var what string
	switch d.Kind {
	case api.DecisionApprove:
		what = "✅ Approved"
		if d.Count > 1 {
			what += fmt.Sprintf(" ×%d", d.Count)
		}
		switch {
		case d.Scope == api.ScopeAgent && d.Pattern != "": // decided before grants: y! kept a pattern
			what += " always (" + d.Pattern + ")"
		case d.Scope == api.ScopeAgent:
			what += " always (this exact command)"
		}
	case api.DecisionDeny:
		what = "⛔ Denied"
		if d.Scope == api.ScopeDeny {
			what += " always (" + d.Pattern + ")"
		}
	case api.DecisionFeedback:
		what = "💬 Feedback"
	default:
		what = string(d.Kind)
	}
	spans := []Span{{Text: what, Bold: true}, {Text: " by "}}
	switch {
	case d.Source == platform && d.By != "":
		spans = append(spans, Mention(platform, d.By))
	case d.Source == "grant": // an automatic approval names its grant and what is left of it
		spans = append(spans, grantSpans(d, platform, grantSource)...)
	case d.Source == "policy":
		spans = append(spans, Span{Text: "policy"})
		if d.Pattern != "" {
			spans = append(spans, Span{Text: " (" + d.Pattern + ")"})
		}
	case d.By != "":
		spans = append(spans, Span{Text: d.By + " via " + d.Source})
	default:
		spans = append(spans, Span{Text: d.Source})
	}
	if d.Grant != "" && d.Source != "grant" {
		spans = append(spans, Span{Text: " (grant " + d.Grant + ")"}) // the id `agentctl policy AGENT revoke` takes
	}
	if p := api.ProfileText(d.Profile); p != "" {
		spans = append(spans, Span{Text: ", runs " + p})
	}
	if d.Kind == api.DecisionFeedback && d.Feedback != "" {
		spans = append(spans, Span{Text: ": " + cut(d.Feedback, maxSpeak)})
	}
	return spans
}

// grantSpans names the grant that approved d as agentctl does ("U123's y -3 (1 of 2
// left)", Decision.GrantText): when the grant was made on platform by a plain id there,
// its maker is shown as a mention, so chat shows the person and not a raw id; else the
// text as it is.
func grantSpans(d *api.Decision, platform, grantSource string) []Span {
	text := d.GrantText()
	rest, ok := strings.CutPrefix(text, d.By+"'s ")
	if grantSource != platform || d.By == "" || !ok || !MentionID(platform, d.By) {
		return []Span{{Text: text}}
	}
	return []Span{{User: d.By}, {Text: "'s " + rest}}
}

// FormatArgs pretty-prints a proposal's args, cut to a readable length.
func FormatArgs(args json.RawMessage) string { return cut(prettyArgs(args), maxArgsShown) }

// prettyArgs is args indented, or as they are when they are not JSON.
func prettyArgs(args json.RawMessage) string {
	var b bytes.Buffer
	if len(args) == 0 || json.Indent(&b, args, "", "  ") != nil {
		return string(args)
	}
	return b.String()
}

// shortPlan keeps the first lines of a plan.
func shortPlan(plan string) string {
	plan = strings.TrimSpace(plan)
	lines := strings.Split(plan, "\n")
	if len(lines) > 3 {
		lines = append(lines[:3], "…")
	}
	return cut(strings.Join(lines, "\n"), maxPlanShown)
}

// FormatResult builds a result message; the full output goes as a file when it is longer
// than maxText (file is then non-empty).
func FormatResult(ep *api.Episode, maxText int) (m Message, file string) {
	mark := "✅"
	if ep.Outcome == "failed" {
		mark = "❌"
	}
	m.Summary = fmt.Sprintf("%s %s", ep.Command, ep.Outcome)
	m.Parts = []Part{{Spans: []Span{{Text: mark + " "}, {Text: ep.Command, Bold: true}, {Text: " " + ep.Outcome}}}}
	out := strings.TrimRight(ep.Result, "\n")
	switch {
	case out == "":
	case len(out) > maxText:
		m.Parts = append(m.Parts, Part{Code: cut(out, 300)}, Part{Spans: []Span{{Text: fmt.Sprintf("Full output (%d bytes) attached.", len(out))}}})
		file = out
	default:
		m.Parts = append(m.Parts, Part{Code: out})
	}
	return m, file
}

// ChangeParts shows what a step changed in the workspace, as a proposal's preview shows
// what it would change: "Workspace: changed 3 files (+12 −4)", then the first lines of
// the diff (diffFile attaches the whole when they are not all of it). None for nil.
func ChangeParts(c *api.StepChange) []Part {
	if c == nil {
		return nil
	}
	return previewParts(c.Preview, "Changed: ")
}

// FormatQuestion builds the message for an ask_user question.
func FormatQuestion(q *api.Question, answered string) Message {
	m := Message{Summary: "Question: " + cut(q.Text, 100)}
	m.Parts = []Part{{Spans: []Span{{Text: "❓ Question:", Bold: true}}}, {Quote: true, Spans: []Span{{Text: q.Text}}}}
	if answered != "" {
		m.Parts = append(m.Parts, Part{Spans: []Span{{Text: answered}}})
	} else {
		m.Parts = append(m.Parts, Part{Spans: []Span{{Text: "Answer by replying in this thread."}}})
	}
	return m
}

// FormatNote is a one-line message. Lines past the first (a model's finish message, a
// reason quoting it) are shown as a quotation, so no line of theirs can pass for one of
// the bot's own ("✅ Approved by …").
func FormatNote(text string) Message {
	first, rest, _ := strings.Cut(text, "\n")
	m := Message{Summary: cut(first, 100), Parts: []Part{{Spans: []Span{{Text: first}}}}}
	if rest = strings.TrimRight(rest, "\n"); rest != "" {
		m.Parts = append(m.Parts, Part{Quote: true, Spans: []Span{{Text: rest}}})
	}
	return m
}

// cut shortens s to at most n bytes (display.Cut), saying how much it left out: a chat
// reader sees the size of what is missing.
func cut(s string, n int) string {
	kept := display.Cut(s, n, "")
	if len(kept) == len(s) {
		return s
	}
	return kept + fmt.Sprintf("… (%d more bytes)", len(s)-len(kept))
}
