package cli

import (
	"fmt"
	"io"
	"strings"

	"github.com/agentd/agentd/api"
)

// diffLinesInFollow bounds the diff follow shows; show prints all of it.
const diffLinesInFollow = 40

// writePreview writes what a proposal would do (api.Preview.Render, the rendering the
// chat bots use too) under indent, at most maxLines lines of diff (0: all).
func writePreview(w io.Writer, pv *api.Preview, indent string, maxLines int) {
	lines, diff := pv.Render()
	if len(lines) == 0 && diff == "" {
		return
	}
	fmt.Fprintf(w, "%spreview:\n", indent)
	for _, l := range lines {
		fmt.Fprintf(w, "%s  %s\n", indent, l)
	}
	if diff == "" {
		return
	}
	head, cut := diff, false
	if maxLines > 0 {
		head, cut = api.HeadLines(diff, maxLines)
	}
	for _, l := range strings.Split(head, "\n") {
		fmt.Fprintln(w, indent+"  "+l) // not trimmed: a change of trailing blanks must show
	}
	if cut {
		fmt.Fprintf(w, "%s  … %d more diff lines: agentctl show prints all\n", indent, strings.Count(diff, "\n")+1-maxLines)
	}
}
