package api

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"

	"github.com/agentd/agentd/internal/display"
)

// PreviewKind says which fields of a Preview are set.
type PreviewKind string

// The kinds of preview.
const (
	// PreviewDiff: a file command's change to one workspace file (Path, Diff).
	PreviewDiff PreviewKind = "diff"
	// PreviewProgram: a program run (Programs, Dir, Sandbox, Network).
	PreviewProgram PreviewKind = "program"
	// PreviewHost: a command that connects out (URL's Host, as the network guard reads it).
	PreviewHost PreviewKind = "host"
	// PreviewChange: what a step changed in the workspace (Summary, and in Diff the paths
	// changed then each text file's unified diff).
	PreviewChange PreviewKind = "change"
)

// MaxPreviewDiff bounds the diff a preview stores, in bytes; a longer one is cut on a
// line and DiffCut set.
const MaxPreviewDiff = 64 << 10

// Preview is what a proposal would do, worked out by the daemon when the proposal is
// made and stored with it, so a person judges the effect rather than the model's args.
// Every string in it may come from the model or the workspace: show it through Render.
type Preview struct {
	Kind PreviewKind `json:"kind"`
	// Path is the workspace file a file command would change (PreviewDiff).
	Path string `json:"path,omitempty"`
	// Diff is a unified diff (3 lines of context) of Path as it is now against what it
	// would become: all "+" for a new file, all "-" for a delete. Empty when Note says
	// why there is none (a binary or huge file, a path the workspace refuses).
	Diff string `json:"diff,omitempty"`
	// DiffCut says Diff was cut at MaxPreviewDiff bytes.
	DiffCut bool `json:"diff_cut,omitempty"`
	// Programs are the simple commands a shell line runs, each its program then its
	// arguments after quote removal, as the permission rules read them (PreviewProgram).
	Programs [][]string `json:"programs,omitempty"`
	// Dir is the working directory the program starts in.
	Dir string `json:"dir,omitempty"`
	// Sandbox is how the program is confined: "bwrap", "none (runs as agentd)", or why
	// it would be refused.
	Sandbox string `json:"sandbox,omitempty"`
	// Network is the network the program has: none (a namespace of its own), its own
	// through slirp4netns (granted), or the host's (unsandboxed).
	Network string `json:"network,omitempty"`
	// Host is the host a network command would connect to, after the network guard's
	// normalisation (IDN to ASCII, numeric forms to the address), with its port.
	Host string `json:"host,omitempty"`
	// Summary is a change's one line: "changed 3 files (+12 −4)" (PreviewChange).
	Summary string `json:"summary,omitempty"`
	// Note is anything else the person should know: why there is no diff, why the line
	// is not plain commands, that the guard would refuse the host.
	Note string `json:"note,omitempty"`
	// Effect is what a shell or python command did when the daemon ran it ahead, in its
	// sandbox with the network off, against a copy of the workspace (PreviewProgram);
	// Diff is then the change it made there. Nil for commands never run ahead.
	Effect *Effect `json:"effect,omitempty"`
}

// Effect is a command's effect preview: its output and the change it made to a copy of
// the workspace, which approving applies instead of running the command again — or why
// there is none, and approving runs the command as usual.
type Effect struct {
	// None says why the command was not run ahead, why its run cannot be applied (the
	// workspace changed since), or that it runs ahead again in the person's profile:
	// approving meanwhile runs the command itself.
	None string `json:"none,omitempty"`
	// Output is what the command printed, with its exit status as a result shows it.
	Output string `json:"output,omitempty"`
	// Summary is the change in one line: "changes 3 files (+12 −4)", or "no changes".
	Summary string `json:"summary,omitempty"`
	// From is the checkpoint of the workspace the copy was made of, To the copy's after
	// the command: approving puts To in place on a workspace still exactly at From.
	From uint64 `json:"from,omitempty"`
	To   uint64 `json:"to,omitempty"`
	// FromRoot and ToRoot are the root hashes of From's and To's trees (hex SHA-256):
	// approving applies To only while the preview store still holds those very trees
	// under From and To. A proposal stored before FromRoot was recorded has none: its
	// approval is refused as stale, and the preview runs again and is asked again.
	FromRoot string `json:"from_root,omitempty"`
	ToRoot   string `json:"to_root,omitempty"`
	// NotShown names what the change's diff cannot show whole (binary or huge content,
	// changes past the listed ones), "; " between them: Render says it on its own line,
	// so a person never approves unseen what the diff text hid.
	NotShown string `json:"not_shown,omitempty"`
	// Profile is the profile the command ran ahead in (Decision.Profile's values: "" as
	// a person approves it): its change is applied only under an approval that runs the
	// command in this same profile, else the command runs itself.
	Profile string `json:"profile,omitempty"`
	// Notice says why the run ahead was on a copy of the workspace, not on an overlay
	// over it (slower, and its disk bounded by a watch alone): the daemon could not mount
	// one here. A daemon's first such preview says it; the later ones do not repeat it.
	Notice string `json:"notice,omitempty"`
}

// Ref is what a decision names of p as it was shown (DecideRequest.Hash, or a prefix of
// it): its Hash, bound to the change its effect preview captured when approving applies
// one — the trees it goes from and to (the diff shown is From's tree against To's) and
// the profile it ran in. A preview run again on other trees gives p a new Ref, even one
// ending in the same tree from another start, so a decision made from the first one is
// refused rather than applying a change nobody saw. The checkpoints' ids are not in it:
// they name no tree for long (the preview store keeps no fsync, and after a crash gives
// an id again to another tree). Computed from the preview itself: nothing to keep in step.
func (p *Proposal) Ref() string {
	if p.Preview == nil || !p.Preview.Effect.Appliable() {
		return p.Hash
	}
	e := p.Preview.Effect
	sum := sha256.Sum256(fmt.Appendf(nil, "%s\x00%s\x00%s\x00%s", p.Hash, e.FromRoot, e.ToRoot, e.Profile))
	return hex.EncodeToString(sum[:])
}

// Appliable reports whether approving applies the captured change instead of running
// the command.
func (e *Effect) Appliable() bool { return e != nil && e.None == "" && e.To != 0 }

// effectOutputLines is how many lines of a preview's output Render shows.
const effectOutputLines = 10

// PreviewDiffLines is how many lines of a diff the chat messages show inline.
const PreviewDiffLines = 15

// Render returns the preview as escaped text for a person, the same in agentctl and chat:
// Lines describe it (one line each, escaped with display.Line), Diff is the whole diff
// escaped with display.Text ("" when there is none).
func (p *Preview) Render() (lines []string, diff string) {
	if p == nil {
		return nil, ""
	}
	esc := func(s string) string { return display.Escape(s, display.Line) }
	switch p.Kind {
	case PreviewDiff:
		lines = append(lines, "File: "+esc(p.Path))
	case PreviewProgram:
		for i, argv := range p.Programs {
			ws := make([]string, len(argv))
			for j, w := range argv {
				ws[j] = esc(quoteArg(w))
			}
			label := "Runs: "
			if len(p.Programs) > 1 {
				label = fmt.Sprintf("Runs (%d/%d): ", i+1, len(p.Programs))
			}
			lines = append(lines, label+strings.Join(ws, " "))
		}
		lines = append(lines, "In: "+esc(p.Dir), "Sandbox: "+esc(p.Sandbox), "Network: "+esc(p.Network))
		lines = append(lines, p.Effect.render()...)
	case PreviewHost:
		lines = append(lines, "Connects to: "+esc(p.Host))
	case PreviewChange:
		lines = append(lines, "Workspace: "+esc(p.Summary))
	}
	if p.Note != "" {
		lines = append(lines, "Note: "+esc(p.Note))
	}
	if hidden := p.notShown(); hidden != "" {
		lines = append(lines, "Not fully shown: "+esc(hidden))
	}
	if p.Diff != "" {
		diff = display.Escape(strings.TrimSuffix(p.Diff, "\n"), display.Text)
		if p.DiffCut {
			diff += fmt.Sprintf("\n… diff cut at %d KiB", MaxPreviewDiff>>10)
		}
	}
	return lines, diff
}

// notShown is what the preview's diff does not show whole, or "".
func (p *Preview) notShown() string {
	var what []string
	if p.Effect != nil && p.Effect.None == "" && p.Effect.NotShown != "" {
		what = append(what, p.Effect.NotShown)
	}
	if p.DiffCut {
		what = append(what, fmt.Sprintf("the diff past its first %d KiB", MaxPreviewDiff>>10))
	}
	return strings.Join(what, "; ")
}

// HeadLines returns the first n lines of text and whether any were left out.
func HeadLines(text string, n int) (string, bool) {
	i := 0
	for k := 0; k < n; k++ {
		j := strings.IndexByte(text[i:], '\n')
		if j < 0 {
			return text, false
		}
		i += j + 1
	}
	if i >= len(text) {
		return text, false
	}
	return strings.TrimSuffix(text[:i], "\n"), true
}

// quoteArg writes an argument so a person reads one word: bare when it is plain, else in
// single quotes (the shell's own quoting, so the line can be read back as it runs).
func quoteArg(w string) string {
	if w != "" && strings.IndexFunc(w, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./=:,+@%^", r))
	}) < 0 {
		return w
	}
	return "'" + strings.ReplaceAll(w, "'", `'\''`) + "'"
}

// render is the effect preview in lines: what the run on a copy changed and printed, or
// why there was none.
func (e *Effect) render() []string {
	switch {
	case e == nil:
		return nil
	case e.None != "":
		return []string{"Effect: not run ahead: " + display.Escape(e.None, display.Line)}
	}
	how := "approving applies this change" // only a person's approval applies a change run ahead in theirs
	if e.Profile != "" {
		how = "in the " + display.Escape(e.Profile, display.Line) + " profile a pattern runs it in; a person's approval runs it again in theirs"
	}
	lines := []string{"Effect (run ahead on a copy, network off; " + how + "): " + display.Escape(e.Summary, display.Line)}
	if e.Notice != "" {
		lines = append(lines, "Notice: "+display.Escape(e.Notice, display.Line))
	}
	out, cut := HeadLines(strings.TrimSuffix(e.Output, "\n"), effectOutputLines)
	if out == "" {
		return append(lines, "Output: (none)")
	}
	for i, l := range strings.Split(out, "\n") {
		label := "  | "
		if i == 0 {
			label = "Output: "
		}
		lines = append(lines, label+display.Escape(l, display.Line))
	}
	if cut {
		lines = append(lines, fmt.Sprintf("  … %d more lines", strings.Count(strings.TrimSuffix(e.Output, "\n"), "\n")+1-effectOutputLines))
	}
	return lines
}
