package commands

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"unicode/utf8"
)

// maxReadBytes bounds what read_file loads; Run's output cap cuts the result further.
const maxReadBytes = 1 << 20

type readFileArgs struct {
	Path      string `json:"path" desc:"file path" max:"256"`
	StartLine int    `json:"start_line,omitempty" desc:"first line" min:"1"`
	EndLine   int    `json:"end_line,omitempty" desc:"last line" min:"1"`
}

// maxRangeScan bounds how far a line-range read walks into a file: far enough for any saved
// output (.outputs files are at most maxSavedBytes), not so far that one read scans a disk image.
const maxRangeScan = 256 << 20

var readFileSpec = Spec{
	Name:        "read_file",
	Description: "Read a text file from the workspace",
	Params:      FromStruct(readFileArgs{}),
	Subject:     "path",
	Class:       ClassRead,
	Idempotent:  true,
}

func init() { Register(&funcCommand[readFileArgs]{readFileSpec, readFile}) }

// readFile returns a text file from the workspace.
func readFile(_ context.Context, env Env, a readFileArgs) (string, error) {
	f, err := openRead(env.Workspace, a.Path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return "", fsError(env.Workspace, a.Path, err)
	}
	if fi.IsDir() {
		return "", &pathError{path: a.Path, problem: "is a folder; use list_folder to see what is in it", err: ErrBadPath}
	}
	if !fi.Mode().IsRegular() {
		return "", &pathError{path: a.Path, problem: "is not a regular file", err: ErrBadPath}
	}
	if a.StartLine > 0 || a.EndLine > 0 {
		return readLines(f, env.Workspace, a)
	}
	data, err := io.ReadAll(io.LimitReader(f, maxReadBytes))
	if err != nil {
		return "", fsError(env.Workspace, a.Path, err)
	}
	if fi.Size() > maxReadBytes {
		data = trimPartialRune(data)
	}
	if !utf8.Valid(data) || bytes.IndexByte(data, 0) >= 0 {
		return "", &pathError{path: a.Path, problem: "is not a text file (binary or not UTF-8); read_file only reads text", err: ErrBadPath}
	}
	if len(data) == 0 {
		return "(the file is empty)", nil
	}
	return string(data), nil
}

// readLines returns lines StartLine..EndLine (1-based, inclusive; either may be left out)
// under a header that places them in the file, so the model can page through a file too
// long to be shown whole. It streams, so the range may lie past the first MiB, and holds
// at most maxReadBytes of it: a line or a range longer than that is cut, not held whole.
func readLines(f *os.File, workspace string, a readFileArgs) (string, error) {
	first, last := max(a.StartLine, 1), a.EndLine
	if last > 0 && last < first {
		return "", fmt.Errorf("read_file: end_line %d is before start_line %d", last, first)
	}
	r := bufio.NewReaderSize(io.LimitReader(f, maxRangeScan), 64<<10)
	var out []byte
	n, shown, lineStart := 0, 0, 0
	midLine, full := false, false
	for {
		chunk, err := r.ReadSlice('\n')
		if len(chunk) > 0 {
			if !midLine {
				n++
				lineStart = len(out)
			}
			if n >= first && (last == 0 || n <= last) && !full {
				if !midLine {
					shown++
				}
				if room := maxReadBytes - len(out); len(chunk) > room {
					out, full = trimPartialRune(append(out, chunk[:room]...)), true
				} else {
					out = append(out, chunk...)
				}
				if line := out[lineStart:]; (err != bufio.ErrBufferFull || full) && (!utf8.Valid(line) || bytes.IndexByte(line, 0) >= 0) {
					return "", &pathError{path: a.Path, problem: fmt.Sprintf("is not a text file (line %d is binary or not UTF-8); read_file only reads text", n), err: ErrBadPath}
				}
			}
			// Past the range, lines are only counted so the header can give the total.
			midLine = err == bufio.ErrBufferFull
		}
		if err == bufio.ErrBufferFull {
			continue
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return "", fsError(workspace, a.Path, err)
		}
	}
	total := fmt.Sprint(n)
	if fi, err := f.Stat(); err == nil && fi.Size() > maxRangeScan {
		total = fmt.Sprintf("more than %d", n)
	}
	if shown == 0 {
		return fmt.Sprintf("[%s has %s lines; none from line %d on]", a.Path, total, first), nil
	}
	body := strings.TrimSuffix(string(out), "\n")
	return fmt.Sprintf("[lines %d-%d of %s in %s]\n%s", first, first+shown-1, total, a.Path, body), nil
}

// trimPartialRune drops an incomplete UTF-8 sequence that a byte limit cut at the end of b.
func trimPartialRune(b []byte) []byte {
	for i := len(b) - 1; i >= 0 && i >= len(b)-utf8.UTFMax; i-- {
		if utf8.RuneStart(b[i]) {
			if !utf8.FullRune(b[i:]) {
				return b[:i]
			}
			break
		}
	}
	return b
}
