package commands

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
)

// appendTailBytes is how much of the file's end an interrupted append shows.
const appendTailBytes = 200

// InterruptedAppend describes, for a person deciding again on an append_to_file the
// daemon died during, what is known now: the file's size, whether it already ends with
// the text (then the append most likely happened), and its last bytes. It reads the file
// through the workspace like the command does; "" when args cannot be read.
func InterruptedAppend(workspace string, raw json.RawMessage) string {
	var a appendToFileArgs
	if err := json.Unmarshal(raw, &a); err != nil || a.Path == "" {
		return ""
	}
	root, _, rel, err := openIn(workspace, a.Path)
	if err != nil {
		return ""
	}
	defer root.Close()
	fi, err := root.Lstat(rel)
	if err != nil || !fi.Mode().IsRegular() {
		return fmt.Sprintf("%s does not exist now, so nothing was written (the %d bytes to append are not there)", a.Path, len(a.Text))
	}
	f, err := root.Open(rel)
	if err != nil {
		return ""
	}
	defer f.Close()
	n := max(int64(appendTailBytes), int64(len(a.Text)))
	start := max(fi.Size()-n, 0)
	buf := make([]byte, fi.Size()-start)
	if _, err := f.ReadAt(buf, start); err != nil && err != io.EOF {
		return ""
	}
	verdict := "does not end with the text to append: most likely nothing, or part of it, was written"
	if a.Text != "" && strings.HasSuffix(string(buf), a.Text) {
		verdict = "already ends with the text to append: most likely it was written; deny to avoid adding it twice"
	}
	tail := buf[max(len(buf)-appendTailBytes, 0):]
	return fmt.Sprintf("%s is %d bytes now and %s (%d bytes to append). Its last %d bytes: %q",
		a.Path, fi.Size(), verdict, len(a.Text), len(tail), tail)
}
