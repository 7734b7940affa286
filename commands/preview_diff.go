package commands

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/sergi/go-diff/diffmatchpatch"

	"github.com/agentd/agentd/api"
)

// maxDiffInput bounds the file a preview reads and diffs: a bigger one gets a note, so a
// proposal is never held up diffing a log file.
const maxDiffInput = 1 << 20

// diffContext is the unchanged lines shown around each change, as diff -u does.
const diffContext = 3

// filePreview is the preview of a change to the workspace file path: before is read
// through the workspace's one resolver, after computes what the file would become from
// it (exists is false for a new file).
// removes says the file itself goes (delete_file), not only its contents.
func filePreview(env Env, path string, removes bool, after func(before string, exists bool) string) *api.Preview {
	pv := &api.Preview{Kind: api.PreviewDiff, Path: path}
	before, exists, note := readForDiff(env.Workspace, path)
	if note != "" {
		pv.Note = note
		return pv
	}
	next := after(before, exists)
	if !utf8.ValidString(next) || strings.IndexByte(next, 0) >= 0 {
		pv.Note = "the new contents are not text; no diff shown"
		return pv
	}
	if len(next) > maxDiffInput {
		pv.Note = fmt.Sprintf("the file would be %d bytes; too big to diff here", len(next))
		return pv
	}
	oldName, newName := "a/"+path, "b/"+path
	if !exists {
		oldName = "/dev/null"
	}
	if next == "" && removes {
		newName = "/dev/null"
	}
	pv.Diff = UnifiedDiff(oldName, newName, before, next)
	switch {
	case pv.Diff == "" && removes:
		pv.Note = "the file is empty; deleting it removes no text"
	case pv.Diff == "":
		pv.Note = "no change: the file already holds exactly this"
	}
	pv.Diff, pv.DiffCut = CutDiff(pv.Diff, api.MaxPreviewDiff)
	return pv
}

// readForDiff reads the workspace file path for a diff, through OpenRead's confinement:
// a path the workspace refuses yields the refusal as a note and nothing of the file. A
// missing file reads as empty and not existing.
func readForDiff(workspace, path string) (text string, exists bool, note string) {
	f, err := openRead(workspace, path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return "", false, ""
	case err != nil:
		return "", false, "no diff: " + err.Error()
	}
	defer f.Close()
	fi, err := f.Stat()
	switch {
	case err != nil:
		return "", false, "no diff: " + errText(err)
	case fi.IsDir():
		return "", false, "no diff: it is a folder"
	case !fi.Mode().IsRegular():
		return "", false, "no diff: it is not a regular file"
	case fi.Size() > maxDiffInput:
		return "", true, fmt.Sprintf("no diff: the file is %d bytes; too big to diff here", fi.Size())
	}
	b, err := io.ReadAll(io.LimitReader(f, maxDiffInput+1))
	if err != nil {
		return "", true, "no diff: reading it failed: " + errText(err)
	}
	if len(b) > maxDiffInput {
		return "", true, "no diff: the file grew past the size diffed here"
	}
	if !utf8.Valid(b) || bytes.IndexByte(b, 0) >= 0 {
		return "", true, fmt.Sprintf("no diff: the file is binary (%d bytes)", len(b))
	}
	return string(b), true, ""
}

// UnifiedDiff returns the unified diff (diff -u, 3 lines of context) turning before into
// after, with the file names on the --- and +++ lines; "" when they are equal. Lines are
// compared whole (diffmatchpatch's line mode); a last line without a newline is marked
// "\ No newline at end of file" as diff does.
func UnifiedDiff(oldName, newName, before, after string) string {
	if before == after {
		return ""
	}
	dmp := diffmatchpatch.New()
	dmp.DiffTimeout = 2 * time.Second // then a coarser but still correct diff
	a, b, lines := dmp.DiffLinesToChars(before, after)
	diffs := dmp.DiffCharsToLines(dmp.DiffMain(a, b, false), lines)
	var ops []diffLine
	for _, d := range diffs {
		for _, l := range splitLines(d.Text) {
			ops = append(ops, diffLine{op: d.Type, text: l})
		}
	}
	var out strings.Builder
	fmt.Fprintf(&out, "--- %s\n+++ %s\n", oldName, newName)
	writeHunks(&out, ops)
	return out.String()
}

// diffLine is one line of the diff: kept, removed or added, with its newline if it has one.
type diffLine struct {
	op   diffmatchpatch.Operation
	text string
}

// splitLines splits s after each newline; the last line may lack one.
func splitLines(s string) []string {
	var out []string
	for s != "" {
		i := strings.IndexByte(s, '\n')
		if i < 0 {
			return append(out, s)
		}
		out = append(out, s[:i+1])
		s = s[i+1:]
	}
	return out
}

// writeHunks groups the changed lines with diffContext lines around them into hunks.
func writeHunks(out *strings.Builder, ops []diffLine) {
	for i := 0; i < len(ops); {
		if ops[i].op == diffmatchpatch.DiffEqual {
			i++
			continue
		}
		start := max(0, i-diffContext)
		end := i // extend over changes whose gap of equal lines is at most 2×context
		for j := i; j < len(ops); j++ {
			if ops[j].op != diffmatchpatch.DiffEqual {
				end = j + 1
			} else if j-end >= 2*diffContext {
				break
			}
		}
		stop := min(len(ops), end+diffContext)
		writeHunk(out, ops, start, stop)
		i = stop
	}
}

// writeHunk writes ops[start:stop] as one hunk with its @@ header.
func writeHunk(out *strings.Builder, ops []diffLine, start, stop int) {
	oldAt, newAt := 1, 1 // line numbers of ops[start] in the old and new file
	for _, d := range ops[:start] {
		if d.op != diffmatchpatch.DiffInsert {
			oldAt++
		}
		if d.op != diffmatchpatch.DiffDelete {
			newAt++
		}
	}
	oldN, newN := 0, 0
	var body strings.Builder
	for _, d := range ops[start:stop] {
		mark := " "
		switch d.op {
		case diffmatchpatch.DiffDelete:
			mark = "-"
			oldN++
		case diffmatchpatch.DiffInsert:
			mark = "+"
			newN++
		default:
			oldN++
			newN++
		}
		body.WriteString(mark + d.text)
		if !strings.HasSuffix(d.text, "\n") {
			body.WriteString("\n\\ No newline at end of file\n")
		}
	}
	fmt.Fprintf(out, "@@ -%s +%s @@\n", hunkRange(oldAt, oldN), hunkRange(newAt, newN))
	out.WriteString(body.String())
}

// hunkRange writes a hunk's start,count as diff -u does: an empty range names the line
// before it, and a count of 1 is left out.
func hunkRange(at, n int) string {
	switch n {
	case 0:
		return fmt.Sprintf("%d,0", at-1)
	case 1:
		return fmt.Sprintf("%d", at)
	}
	return fmt.Sprintf("%d,%d", at, n)
}

// CutDiff cuts a diff longer than limit bytes at the end of a line.
func CutDiff(diff string, limit int) (string, bool) {
	if len(diff) <= limit {
		return diff, false
	}
	cut := diff[:limit]
	if i := strings.LastIndexByte(cut, '\n'); i >= 0 {
		cut = cut[:i+1]
	}
	return cut, true
}
