package commands

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
)

// run executes the registered command name in workspace ws through Run, as the agent loop does.
func run(t *testing.T, name, ws string, args any, lim Limits) (string, error) {
	t.Helper()
	c, ok := Lookup(name)
	if !ok {
		t.Fatalf("%s is not registered", name)
	}
	raw, ok := args.(string)
	if !ok {
		b, err := json.Marshal(args)
		if err != nil {
			t.Fatal(err)
		}
		raw = string(b)
	}
	return Run(context.Background(), c, Env{Workspace: ws, AgentID: "a1"}, json.RawMessage(raw), lim)
}

// checkNoLeak fails if a result shows anything read from outside the workspace. Errors
// may echo the path the model gave, but never what is behind it.
func checkNoLeak(t *testing.T, out string, err error) {
	t.Helper()
	leaks := []string{secret, "root:"}
	for _, leak := range append(leaks, "secret.txt", "hostname") {
		if strings.Contains(out, leak) {
			t.Errorf("output leaks %q from outside the workspace: %q", leak, out)
		}
	}
	for _, leak := range leaks {
		if err != nil && strings.Contains(err.Error(), leak) {
			t.Errorf("error leaks %q from outside the workspace: %v", leak, err)
		}
	}
}

func TestReadFile(t *testing.T) {
	s := newSandbox(t)
	write := func(name string, b []byte) {
		if err := os.WriteFile(filepath.Join(s.ws, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("empty.txt", nil)
	write("binary.bin", []byte{0x7f, 'E', 'L', 'F', 0, 0, 1})
	write("latin1.txt", []byte("caf\xe9"))
	write("big.txt", []byte(strings.Repeat("é", 1000)))
	write(strings.Repeat("n", 255), []byte("long name"))
	write("lines.txt", []byte("one\ntwo\nthree\nfour\n"))
	write("nonl.txt", []byte("one\ntwo"))
	write("halfbinary.txt", []byte("ok\nbad\x00\n"))
	if err := syscall.Mkfifo(filepath.Join(s.ws, "fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		args    any
		lim     Limits
		want    string
		wantErr string
	}{
		{name: "text_file", args: map[string]any{"path": "docs/readme.txt"}, want: "hello"},
		{name: "through_symlink_inside", args: map[string]any{"path": "inside/readme.txt"}, want: "hello"},
		{name: "through_absolute_symlink_inside", args: map[string]any{"path": "absinside/readme.txt"}, want: "hello"},
		{name: "longest_name", args: map[string]any{"path": strings.Repeat("n", 255)}, want: "long name"},
		{name: "empty_file", args: map[string]any{"path": "empty.txt"}, want: "(the file is empty)"},
		{name: "output_cap_on_rune_boundary", args: map[string]any{"path": "big.txt"}, lim: Limits{OutputCap: 11},
			want: "ééééé\n[output cut at 10 of 2000 bytes]\n[read the rest with read_file start_line and end_line]"},
		{name: "line_range", args: map[string]any{"path": "lines.txt", "start_line": 2, "end_line": 3}, want: "[lines 2-3 of 4 in lines.txt]\ntwo\nthree"},
		{name: "line_range_from_start", args: map[string]any{"path": "lines.txt", "end_line": 1}, want: "[lines 1-1 of 4 in lines.txt]\none"},
		{name: "line_range_to_end", args: map[string]any{"path": "lines.txt", "start_line": 3}, want: "[lines 3-4 of 4 in lines.txt]\nthree\nfour"},
		{name: "line_range_past_end", args: map[string]any{"path": "lines.txt", "start_line": 9}, want: "[lines.txt has 4 lines; none from line 9 on]"},
		{name: "line_range_end_beyond_file", args: map[string]any{"path": "nonl.txt", "start_line": 2, "end_line": 50}, want: "[lines 2-2 of 2 in nonl.txt]\ntwo"},
		{name: "line_range_skips_binary_outside", args: map[string]any{"path": "halfbinary.txt", "end_line": 1}, want: "[lines 1-1 of 2 in halfbinary.txt]\nok"},
		{name: "line_range_binary_inside", args: map[string]any{"path": "halfbinary.txt", "start_line": 2}, wantErr: "line 2 is binary or not UTF-8"},
		{name: "line_range_reversed", args: map[string]any{"path": "lines.txt", "start_line": 3, "end_line": 2}, wantErr: "read_file: end_line 2 is before start_line 3"},
		{name: "line_range_zero", args: map[string]any{"path": "lines.txt", "start_line": 0}, wantErr: "$.start_line"},
		{name: "line_range_not_integer", args: map[string]any{"path": "lines.txt", "start_line": 1.5}, wantErr: "$.start_line"},
		{name: "binary", args: map[string]any{"path": "binary.bin"}, wantErr: `path "binary.bin" is not a text file`},
		{name: "not_utf8", args: map[string]any{"path": "latin1.txt"}, wantErr: "not a text file (binary or not UTF-8)"},
		{name: "folder", args: map[string]any{"path": "docs"}, wantErr: `path "docs" is a folder; use list_folder`},
		{name: "workspace_root", args: map[string]any{"path": "."}, wantErr: "is a folder"},
		{name: "fifo", args: map[string]any{"path": "fifo"}, wantErr: `path "fifo" is not a regular file`},
		{name: "missing", args: map[string]any{"path": "nope.txt"}, wantErr: `path "nope.txt" does not exist`},
		{name: "missing_path_arg", args: map[string]any{}, wantErr: `read_file: bad args: $: missing required property "path"`},
		{name: "path_not_a_string", args: map[string]any{"path": 7}, wantErr: "$.path: want a string, got a number"},
		{name: "extra_arg", args: map[string]any{"path": "a", "mode": "r"}, wantErr: `unexpected property "mode" (allowed: path, start_line, end_line)`},
		{name: "args_not_json", args: `{"path":`, wantErr: "read_file: args are not valid JSON"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := run(t, "read_file", s.ws, tt.args, tt.lim)
			if !checkOutput(t, out, err, tt.want, tt.wantErr) {
				return
			}
		})
	}
}

func TestWriteFile(t *testing.T) {
	s := newSandbox(t)
	private := filepath.Join(s.ws, "private.txt")
	if err := os.WriteFile(private, []byte("old"), 0o600); err != nil {
		t.Fatal(err)
	}
	long := strings.Repeat("n", 255)
	tests := []fileCase{
		{name: "new_file", args: map[string]any{"path": "notes.txt", "contents": "hello"},
			want: "wrote 5 bytes to notes.txt", file: "notes.txt", contents: "hello", mode: 0o644},
		{name: "creates_parent_folders", args: map[string]any{"path": "a/b/c.txt", "contents": "x"},
			want: "wrote 1 bytes to a/b/c.txt", file: "a/b/c.txt", contents: "x"},
		{name: "replace_keeps_mode", args: map[string]any{"path": "private.txt", "contents": "new"},
			want: "wrote 3 bytes to private.txt", file: "private.txt", contents: "new", mode: 0o600},
		{name: "same_content_twice", args: map[string]any{"path": "private.txt", "contents": "new"},
			want: "wrote 3 bytes to private.txt", file: "private.txt", contents: "new", mode: 0o600},
		{name: "empty_contents", args: map[string]any{"path": "empty.txt", "contents": ""},
			want: "wrote 0 bytes to empty.txt", file: "empty.txt", contents: ""},
		{name: "through_symlink_inside", args: map[string]any{"path": "inside/new.txt", "contents": "in"},
			want: "wrote 2 bytes to inside/new.txt", file: "docs/new.txt", contents: "in"},
		{name: "path_is_cleaned", args: map[string]any{"path": "./docs//x/../y.txt", "contents": "y"},
			want: "wrote 1 bytes to docs/y.txt", file: "docs/y.txt", contents: "y"},
		{name: "longest_name", args: map[string]any{"path": long, "contents": "n"},
			want: "wrote 1 bytes to " + long, file: long, contents: "n"},
		{name: "workspace_root", args: map[string]any{"path": ".", "contents": "x"}, wantErr: `path "." is the workspace folder itself`},
		{name: "folder", args: map[string]any{"path": "docs", "contents": "x"}, wantErr: `path "docs" is a folder; give a file name`},
		{name: "under_a_file", args: map[string]any{"path": "docs/readme.txt/x", "contents": "x"}, wantErr: "which is a file, not a folder"},
		{name: "missing_contents", args: map[string]any{"path": "x.txt"}, wantErr: `missing required property "contents"`},
		{name: "contents_not_a_string", args: map[string]any{"path": "x.txt", "contents": []int{1}}, wantErr: "$.contents: want a string, got an array"},
	}
	runFileCases(t, "write_file", s.ws, tests)
	checkNoTempFiles(t, s.ws)
}

// fileCase is one call of a file command, the cases of a table running in order: the
// output it gives (or the error), and what a file holds afterwards.
type fileCase struct {
	name     string
	args     any
	want     string
	wantErr  string
	file     string // relative to the workspace: holds contents afterwards
	contents string
	mode     fs.FileMode // 0: not checked
}

// runFileCases runs each case through command in workspace ws, in order, as a subtest.
func runFileCases(t *testing.T, command, ws string, tests []fileCase) {
	t.Helper()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := run(t, command, ws, tt.args, Limits{})
			if !checkOutput(t, out, err, tt.want, tt.wantErr) {
				return
			}
			checkFileHolds(t, ws, tt.file, tt.contents, tt.mode)
		})
	}
}

// checkOutput fails t unless a command gave want (when wantErr is empty) or an error
// containing wantErr; it reports whether the command succeeded, so the caller goes on to
// check what it did.
func checkOutput(t *testing.T, out string, err error, want, wantErr string) bool {
	t.Helper()
	if wantErr != "" {
		if err == nil || !strings.Contains(err.Error(), wantErr) {
			t.Fatalf("got %q, %v; want error containing %q", out, err, wantErr)
		}
		return false
	}
	if err != nil || out != want {
		t.Fatalf("got %q, %v; want %q", out, err, want)
	}
	return true
}

// checkFileHolds fails t unless file (relative to ws) holds contents, with mode if it is
// not 0.
func checkFileHolds(t *testing.T, ws, file, contents string, mode fs.FileMode) {
	t.Helper()
	p := filepath.Join(ws, file)
	if b, err := os.ReadFile(p); err != nil || string(b) != contents {
		t.Errorf("%s holds %q, %v; want %q", file, b, err, contents)
	}
	if fi, err := os.Lstat(p); err == nil && mode != 0 && fi.Mode() != mode {
		t.Errorf("%s has mode %v, want %v", file, fi.Mode(), mode)
	}
}

// checkNoTempFiles fails if an atomic write left its temporary file behind.
func checkNoTempFiles(t *testing.T, ws string) {
	t.Helper()
	filepath.WalkDir(ws, func(path string, d fs.DirEntry, err error) error {
		if err == nil && strings.HasPrefix(d.Name(), ".write-") {
			t.Errorf("temporary file left behind: %s", path)
		}
		return nil
	})
}

func TestWriteFileTimeoutLeavesOldContents(t *testing.T) {
	s := newSandbox(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	// Execute directly: Run refuses to start under a done context.
	args := json.RawMessage(`{"path":"docs/readme.txt","contents":"new"}`)
	if _, err := (writeFile{}).Execute(ctx, Env{Workspace: s.ws}, args); err == nil {
		t.Fatal("write under a cancelled context succeeded")
	}
	if b, _ := os.ReadFile(filepath.Join(s.ws, "docs/readme.txt")); string(b) != "hello" {
		t.Errorf("file holds %q after a cancelled write, want the old %q", b, "hello")
	}
	checkNoTempFiles(t, s.ws)
}

func TestListFolder(t *testing.T) {
	s := newSandbox(t)
	if err := os.Mkdir(filepath.Join(s.ws, "empty"), 0o755); err != nil {
		t.Fatal(err)
	}
	many := filepath.Join(s.ws, "many")
	if err := os.Mkdir(many, 0o755); err != nil {
		t.Fatal(err)
	}
	var first []string
	for i := range 250 {
		name := fmt.Sprintf("f%03d", i)
		if i < maxListed {
			first = append(first, name)
		}
		if err := os.WriteFile(filepath.Join(many, name), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := syscall.Mkfifo(filepath.Join(s.ws, "fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		args    any
		want    string
		wantErr string
	}{
		{name: "workspace_root", args: map[string]any{"path": "."}, want: strings.Join([]string{
			"absinside/", "dangling (unusable link)", "docs/", "empty/", "etc (unusable link)", "fifo", "inside/",
			"loop (unusable link)", "many/", "out (unusable link)", "passwd (unusable link)", "secret (unusable link)",
		}, "\n")},
		{name: "fifo", args: map[string]any{"path": "fifo"}, wantErr: `path "fifo" is a file, not a folder`},
		{name: "sub_folder", args: map[string]any{"path": "docs"}, want: "readme.txt\nup (unusable link)"},
		{name: "through_symlink_inside", args: map[string]any{"path": "inside/"}, want: "readme.txt\nup (unusable link)"},
		{name: "empty_folder", args: map[string]any{"path": "empty"}, want: "(empty folder)"},
		{name: "capped_count", args: map[string]any{"path": "many"},
			want: strings.Join(first, "\n") + "\n[showing 200 of 250 entries]"},
		{name: "file", args: map[string]any{"path": "docs/readme.txt"}, wantErr: `path "docs/readme.txt" is a file, not a folder; use read_file`},
		{name: "missing", args: map[string]any{"path": "nope"}, wantErr: `path "nope" does not exist`},
		{name: "missing_path_arg", args: `{}`, wantErr: `missing required property "path"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := run(t, "list_folder", s.ws, tt.args, Limits{})
			if !checkOutput(t, out, err, tt.want, tt.wantErr) {
				return
			}
		})
	}
}

// Every file command refuses every path of the escape corpus, reads nothing from outside
// and creates or changes nothing outside.
func TestFileCommandsRefuseEscapes(t *testing.T) {
	s := newSandbox(t)
	before := s.snapshot(t)
	for _, cmd := range []string{"read_file", "write_file", "list_folder"} {
		for name, p := range escapes(s) {
			t.Run(cmd+"/"+name, func(t *testing.T) {
				args := map[string]any{"path": p}
				if cmd == "write_file" {
					args["contents"] = "pwned"
				}
				out, err := run(t, cmd, s.ws, args, Limits{})
				if err == nil {
					t.Fatalf("%s(%q) = %q, want an error", cmd, p, out)
				}
				if out != "" {
					t.Errorf("%s(%q) returned output %q with its error", cmd, p, out)
				}
				if !errors.Is(err, ErrBadPath) {
					t.Errorf("error %v does not wrap ErrBadPath", err)
				}
				checkNoLeak(t, out, err)
			})
		}
	}
	s.checkUntouched(t, before)
	if _, err := os.Lstat(filepath.Join(s.dir, "x")); err == nil {
		t.Error(`a write to "../x" created a file beside the workspace`)
	}
	checkNoTempFiles(t, s.ws)
}

// TestReadFileLineRangeMemoryBounded checks that a line-range read holds at most about
// what it can show, however long the file's lines or however many of them are in range:
// a file the model's shell made (a sparse one of zeros, one line of 48 MiB, a million
// short lines) must not make the daemon hold it whole.
func TestReadFileLineRangeMemoryBounded(t *testing.T) {
	s := newSandbox(t)
	const size = 48 << 20
	sparse, err := os.Create(filepath.Join(s.ws, "sparse"))
	if err != nil {
		t.Fatal(err)
	}
	if err := sparse.Truncate(size); err != nil {
		t.Fatal(err)
	}
	sparse.Close()
	long := strings.Repeat("a", size) + "\nend\n"
	if err := os.WriteFile(filepath.Join(s.ws, "oneline.txt"), []byte(long), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(s.ws, "many.txt"), []byte(strings.Repeat("line\n", size/5)), 0o644); err != nil {
		t.Fatal(err)
	}
	long = ""
	tests := []struct {
		name string
		args map[string]any
		want string
	}{
		{name: "sparse_zeros_past_range", args: map[string]any{"path": "sparse", "start_line": 2}, want: "[sparse has 1 lines; none from line 2 on]"},
		{name: "long_line_past_range", args: map[string]any{"path": "oneline.txt", "start_line": 2}, want: "[lines 2-2 of 2 in oneline.txt]\nend"},
		{name: "long_line_in_range", args: map[string]any{"path": "oneline.txt", "start_line": 1}, want: "[lines 1-"},
		{name: "many_lines_in_range", args: map[string]any{"path": "many.txt", "start_line": 1}, want: "[lines 1-"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			runtime.GC()
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			got, err := run(t, "read_file", s.ws, tt.args, Limits{})
			runtime.ReadMemStats(&after)
			if err != nil || !strings.HasPrefix(got, tt.want) {
				t.Errorf("got %.200q, %v; want it to start with %q", got, err, tt.want)
			}
			if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 16<<20 {
				t.Errorf("reading allocated %d MiB; want the read bounded by what it can show", alloc>>20)
			}
		})
	}
}
