package commands

import (
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/agentd/agentd/internal/testutil"
)

func TestAppendToFile(t *testing.T) {
	s := newSandbox(t)
	private := filepath.Join(s.ws, "private.txt")
	if err := os.WriteFile(private, []byte("a\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("private.txt", filepath.Join(s.ws, "plink")); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(s.ws, "fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	long := strings.Repeat("n", 255)
	// The cases run in order and build on each other, as a model's appends would.
	tests := []fileCase{
		{name: "new_file", args: map[string]any{"path": "log.txt", "text": "one\n"},
			want: "appended 4 bytes to log.txt (now 4 bytes)", file: "log.txt", contents: "one\n", mode: 0o644},
		{name: "appends_at_the_end", args: map[string]any{"path": "log.txt", "text": "two\n"},
			want: "appended 4 bytes to log.txt (now 8 bytes)", file: "log.txt", contents: "one\ntwo\n"},
		{name: "not_idempotent_appends_again", args: map[string]any{"path": "log.txt", "text": "two\n"},
			want: "appended 4 bytes to log.txt (now 12 bytes)", file: "log.txt", contents: "one\ntwo\ntwo\n"},
		{name: "text_kept_as_given", args: map[string]any{"path": "private.txt", "text": "b"},
			want: "appended 1 bytes to private.txt (now 3 bytes)", file: "private.txt", contents: "a\nb", mode: 0o600},
		{name: "empty_text", args: map[string]any{"path": "private.txt", "text": ""},
			want: "appended 0 bytes to private.txt (now 3 bytes)", file: "private.txt", contents: "a\nb"},
		{name: "through_symlink_to_file_inside", args: map[string]any{"path": "plink", "text": "c"},
			want: "appended 1 bytes to plink (now 4 bytes)", file: "private.txt", contents: "a\nbc"},
		{name: "creates_parent_folders", args: map[string]any{"path": "a/b/c.txt", "text": "x"},
			want: "appended 1 bytes to a/b/c.txt (now 1 bytes)", file: "a/b/c.txt", contents: "x"},
		{name: "through_symlink_inside", args: map[string]any{"path": "inside/readme.txt", "text": "!"},
			want: "appended 1 bytes to inside/readme.txt (now 6 bytes)", file: "docs/readme.txt", contents: "hello!"},
		{name: "path_is_cleaned", args: map[string]any{"path": "./docs//x/../notes.md", "text": "é"},
			want: "appended 2 bytes to docs/notes.md (now 2 bytes)", file: "docs/notes.md", contents: "é"},
		{name: "longest_name", args: map[string]any{"path": long, "text": "n"},
			want: "appended 1 bytes to " + long + " (now 1 bytes)", file: long, contents: "n"},
		{name: "workspace_root", args: map[string]any{"path": ".", "text": "x"}, wantErr: `path "." is the workspace folder itself`},
		{name: "folder", args: map[string]any{"path": "docs", "text": "x"}, wantErr: `path "docs" is a folder; give a file name`},
		{name: "fifo", args: map[string]any{"path": "fifo", "text": "x"}, wantErr: `path "fifo" is not a regular file`},
		{name: "under_a_file", args: map[string]any{"path": "docs/readme.txt/x", "text": "x"}, wantErr: "which is a file, not a folder"},
		{name: "nul_in_text", args: map[string]any{"path": "log.txt", "text": "a\x00b"}, wantErr: "text contains a NUL byte"},
		{name: "missing_text", args: map[string]any{"path": "log.txt"}, wantErr: `missing required property "text"`},
		{name: "text_not_a_string", args: map[string]any{"path": "log.txt", "text": 3}, wantErr: "$.text: want a string, got a number"},
	}
	runFileCases(t, "append_to_file", s.ws, tests)
	if b, _ := os.ReadFile(filepath.Join(s.ws, "log.txt")); string(b) != "one\ntwo\ntwo\n" {
		t.Errorf("a refused append changed log.txt: %q", b)
	}
}

func TestDeleteFile(t *testing.T) {
	s := newSandbox(t)
	write := func(name, contents string) {
		t.Helper()
		p := filepath.Join(s.ws, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(contents), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("old.txt", "x")
	write("sub/deep/gone.txt", "x")
	write("kept.txt", "kept")
	write("through/target.txt", "target")
	if err := os.Symlink("kept.txt", filepath.Join(s.ws, "klink")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("docs", filepath.Join(s.ws, "dlink")); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(s.ws, "emptydir"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(s.ws, "fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	// The cases run in order: the second delete of a file finds it gone.
	tests := []struct {
		name    string
		path    string
		want    string
		wantErr string
		gone    []string // relative to the workspace: must not exist afterwards
		kept    []string // must still exist
	}{
		{name: "file", path: "old.txt", want: "deleted old.txt", gone: []string{"old.txt"}},
		{name: "again_is_not_an_error", path: "old.txt", want: "nothing to delete: old.txt does not exist"},
		{name: "nested_file_keeps_folders", path: "sub/deep/gone.txt", want: "deleted sub/deep/gone.txt",
			gone: []string{"sub/deep/gone.txt"}, kept: []string{"sub/deep"}},
		{name: "missing_folder", path: "no/such/file.txt", want: "nothing to delete: no/such/file.txt does not exist"},
		{name: "path_is_cleaned", path: "./through//x/../target.txt", want: "deleted through/target.txt",
			gone: []string{"through/target.txt"}},
		{name: "link_not_its_target", path: "klink", want: "deleted the link klink; the file it pointed to is kept",
			gone: []string{"klink"}, kept: []string{"kept.txt"}},
		{name: "link_to_folder_inside", path: "dlink", want: "deleted the link dlink; the file it pointed to is kept",
			gone: []string{"dlink"}, kept: []string{"docs/readme.txt"}},
		{name: "through_symlink_inside", path: "inside/readme.txt", want: "deleted inside/readme.txt",
			gone: []string{"docs/readme.txt"}, kept: []string{"inside"}},
		{name: "fifo", path: "fifo", want: "deleted fifo", gone: []string{"fifo"}},
		{name: "folder", path: "docs", wantErr: `path "docs" is a folder; delete_file only deletes files`, kept: []string{"docs"}},
		{name: "empty_folder", path: "emptydir", wantErr: "is a folder", kept: []string{"emptydir"}},
		{name: "workspace_root", path: ".", wantErr: `path "." is the workspace folder itself`},
		{name: "workspace_root_spelled_long", path: "docs/..", wantErr: "is the workspace folder itself"},
		{name: "under_a_file", path: "kept.txt/x", wantErr: "which is a file, not a folder", kept: []string{"kept.txt"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := run(t, "delete_file", s.ws, map[string]any{"path": tt.path}, Limits{})
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("got %q, %v; want error containing %q", out, err, tt.wantErr)
				}
				if !errors.Is(err, ErrBadPath) {
					t.Errorf("error %v does not wrap ErrBadPath", err)
				}
			} else if err != nil || out != tt.want {
				t.Fatalf("got %q, %v; want %q", out, err, tt.want)
			}
			for _, p := range tt.gone {
				if _, err := os.Lstat(filepath.Join(s.ws, p)); !errors.Is(err, fs.ErrNotExist) {
					t.Errorf("%s still exists (%v)", p, err)
				}
			}
			for _, p := range tt.kept {
				if _, err := os.Lstat(filepath.Join(s.ws, p)); err != nil {
					t.Errorf("%s was removed: %v", p, err)
				}
			}
		})
	}
}

// After a crash mid-append, the person deciding again sees the file's size, whether the
// text is already at its end, and its tail.
func TestInterruptedAppend(t *testing.T) {
	tests := []struct {
		name, content string // content "" with missing: no file
		missing       bool
		want          []string
	}{
		{"written", "notes\nline two\n", false, []string{"notes.txt is 15 bytes now", "already ends with the text", "deny to avoid adding it twice", `"notes\nline two\n"`}},
		{"not_written", "notes\n", false, []string{"notes.txt is 6 bytes now", "does not end with the text", `"notes\n"`}},
		{"no_file", "", true, []string{"notes.txt does not exist now, so nothing was written"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ws := t.TempDir()
			if !tt.missing {
				if err := os.WriteFile(filepath.Join(ws, "notes.txt"), []byte(tt.content), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			args, _ := json.Marshal(appendToFileArgs{Path: "notes.txt", Text: "line two\n"})
			got := InterruptedAppend(ws, args)
			testutil.CheckContains(t, "the note", got, tt.want, nil)
		})
	}
	// The tail is bounded, and a path out of the workspace shows nothing.
	ws := t.TempDir()
	if err := os.WriteFile(filepath.Join(ws, "big.txt"), []byte(strings.Repeat("x", 5000)), 0o644); err != nil {
		t.Fatal(err)
	}
	args, _ := json.Marshal(appendToFileArgs{Path: "big.txt", Text: "y"})
	if got := InterruptedAppend(ws, args); !strings.Contains(got, "last 200 bytes") || len(got) > 600 {
		t.Errorf("big file note (%d bytes): %s", len(got), got)
	}
	args, _ = json.Marshal(appendToFileArgs{Path: "../outside.txt", Text: "y"})
	if got := InterruptedAppend(ws, args); got != "" {
		t.Errorf("a path out of the workspace gave %q, want nothing", got)
	}
}
