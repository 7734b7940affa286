package commands

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

func TestRunSavesLongOutput(t *testing.T) {
	long := strings.Repeat("0123456789", 3)
	huge := strings.Repeat("x", maxSavedBytes+10)
	tests := []struct {
		name   string
		out    string
		lim    Limits
		setup  func(t *testing.T, s *sandbox) string // returns the workspace; nil: s.ws
		want   string                                // the output, with SAVED for the saved file's path
		saved  string                                // what the saved file holds
		noSave bool                                  // no .outputs folder may appear
	}{
		{name: "saved_when_cut", out: long, lim: Limits{OutputCap: 10},
			want:  "0123456789\n[output cut at 10 of 30 bytes; full output saved to SAVED]",
			saved: long},
		{name: "cut_on_rune_boundary", out: "日本語", lim: Limits{OutputCap: 5},
			want:  "日\n[output cut at 3 of 9 bytes; full output saved to SAVED]",
			saved: "日本語"},
		{name: "huge_output_saved_in_part", out: huge, lim: Limits{OutputCap: 4},
			want:  "xxxx\n[output cut at 4 of 4194314 bytes; its first 4 MiB saved to SAVED]",
			saved: huge[:maxSavedBytes]},
		{name: "under_cap_not_saved", out: long, lim: Limits{OutputCap: 30}, want: long, noSave: true},
		{name: "no_workspace_old_notice", out: long, lim: Limits{OutputCap: 10},
			setup: func(*testing.T, *sandbox) string { return "" },
			want:  "0123456789\n[output cut at 10 of 30 bytes]", noSave: true},
		{name: "missing_workspace", out: long, lim: Limits{OutputCap: 10},
			setup: func(_ *testing.T, s *sandbox) string { return filepath.Join(s.dir, "gone") },
			want:  "0123456789\n[output cut at 10 of 30 bytes; the full output could not be saved: workspace: folder", noSave: true},
		{name: "outputs_is_a_file", out: long, lim: Limits{OutputCap: 10},
			setup: func(t *testing.T, s *sandbox) string {
				if err := os.WriteFile(filepath.Join(s.ws, outputsDir), []byte("mine"), 0o644); err != nil {
					t.Fatal(err)
				}
				return s.ws
			},
			want: "0123456789\n[output cut at 10 of 30 bytes; the full output could not be saved: .outputs is not a folder]"},
		{name: "outputs_links_outside", out: long, lim: Limits{OutputCap: 10},
			setup: func(t *testing.T, s *sandbox) string {
				if err := os.Symlink(s.outside, filepath.Join(s.ws, outputsDir)); err != nil {
					t.Fatal(err)
				}
				return s.ws
			},
			want: "0123456789\n[output cut at 10 of 30 bytes; the full output could not be saved: .outputs is not a folder]"},
	}
	savedRE := regexp.MustCompile(`\.outputs/test_cmd-\d{8}T\d{6}Z-[0-9a-f]{8}\.txt`)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newSandbox(t)
			before := s.snapshot(t)
			ws := s.ws
			if tt.setup != nil {
				ws = tt.setup(t, s)
			}
			c := testCmd{exec: func(context.Context, json.RawMessage) (string, error) { return tt.out, nil }}
			out, err := Run(context.Background(), c, Env{Workspace: ws}, json.RawMessage(`{"n":1}`), tt.lim)
			if err != nil {
				t.Fatal(err)
			}
			s.checkUntouched(t, before)
			if tt.noSave {
				if _, err := os.Lstat(filepath.Join(s.ws, outputsDir)); err == nil {
					t.Errorf("%s was created", outputsDir)
				}
				if !strings.HasPrefix(out, tt.want) {
					t.Fatalf("got %q, want %q", out, tt.want)
				}
				return
			}
			rel := savedRE.FindString(out)
			want := strings.Replace(tt.want, "SAVED", rel, 1)
			if out != want {
				t.Fatalf("got %q, want %q", out, want)
			}
			if tt.saved == "" {
				return
			}
			if rel == "" {
				t.Fatalf("no saved file named in %q", out)
			}
			p := filepath.Join(s.ws, rel)
			b, err := os.ReadFile(p)
			if err != nil || string(b) != tt.saved {
				t.Errorf("saved file holds %d bytes, %v; want %d", len(b), err, len(tt.saved))
			}
			if fi, err := os.Stat(p); err != nil || fi.Mode().Perm() != 0o600 {
				t.Errorf("saved file mode %v, %v; want 0600", fi.Mode(), err)
			}
			if fi, err := os.Stat(filepath.Dir(p)); err != nil || fi.Mode().Perm() != 0o700 {
				t.Errorf("%s mode %v, %v; want 0700", outputsDir, fi.Mode(), err)
			}
			checkNoTempFiles(t, s.ws)
		})
	}
}

// The model can find what it was not shown: read_file reads the saved file back.
func TestSavedOutputReadsBack(t *testing.T) {
	s := newSandbox(t)
	full := strings.Repeat("line\n", 100)
	c := testCmd{exec: func(context.Context, json.RawMessage) (string, error) { return full, nil }}
	out, err := Run(context.Background(), c, Env{Workspace: s.ws}, json.RawMessage(`{"n":1}`), Limits{OutputCap: 20})
	if err != nil {
		t.Fatal(err)
	}
	rel := regexp.MustCompile(`\.outputs/\S+\.txt`).FindString(out)
	back, err := run(t, "read_file", s.ws, map[string]any{"path": rel}, Limits{})
	if err != nil || back != full {
		t.Fatalf("read_file(%q) = %d bytes, %v; want the %d bytes of the full output", rel, len(back), err, len(full))
	}
}

// read_file's output is a workspace file already: a copy would read back cut the same way.
func TestReadFileOutputNotSaved(t *testing.T) {
	s := newSandbox(t)
	if err := os.WriteFile(filepath.Join(s.ws, "big.txt"), []byte(strings.Repeat("a", 100)), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := run(t, "read_file", s.ws, map[string]any{"path": "big.txt"}, Limits{OutputCap: 10})
	if want := "aaaaaaaaaa\n[output cut at 10 of 100 bytes]\n[read the rest with read_file start_line and end_line]"; err != nil || out != want {
		t.Fatalf("got %q, %v; want %q", out, err, want)
	}
	if _, err := os.Lstat(filepath.Join(s.ws, outputsDir)); err == nil {
		t.Errorf("%s was created for read_file", outputsDir)
	}
}

func TestPruneOutputs(t *testing.T) {
	ws := t.TempDir()
	dir := filepath.Join(ws, outputsDir)
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	old := time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)
	var names []string
	for i := range maxSavedOutputs + 5 {
		name := fmt.Sprintf("cmd-%s-%08x.txt", old.Add(time.Duration(i)*time.Minute).Format(outputTimeFormat), i)
		names = append(names, name)
		if err := os.WriteFile(filepath.Join(dir, name), nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	// Not saveOutput's: kept whatever their age.
	for _, mine := range []string{"notes.txt", "a-b-c.txt", "cmd-20200101T000000Z-zzzzzzzz.txt"} {
		if err := os.WriteFile(filepath.Join(dir, mine), nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	rel, err := saveOutput(ws, "mem.echo", "new", old.Add(-time.Hour)) // a clock set back
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(rel, ".outputs/mem_echo-20191231T230000Z-") {
		t.Errorf("saved as %q", rel)
	}
	left := map[string]bool{}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		left[e.Name()] = true
	}
	for i, name := range names {
		if kept := i >= 5; left[name] != kept {
			t.Errorf("%s kept %v, want %v", name, left[name], kept)
		}
	}
	for _, name := range []string{"notes.txt", "a-b-c.txt", "cmd-20200101T000000Z-zzzzzzzz.txt", filepath.Base(rel)} {
		if !left[name] {
			t.Errorf("%s was removed", name)
		}
	}
	if len(left) != maxSavedOutputs+4 {
		t.Errorf("%d files left, want %d", len(left), maxSavedOutputs+4)
	}
}

func TestFileSafe(t *testing.T) {
	tests := []struct{ name, in, want string }{
		{name: "snake_case", in: "execute_shell", want: "execute_shell"},
		{name: "mcp_name", in: "mem.echo", want: "mem_echo"},
		{name: "slashes_and_dots", in: "../x/y", want: "___x_y"},
		{name: "empty", in: "", want: "output"},
		{name: "long", in: strings.Repeat("a", 100), want: strings.Repeat("a", 64)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := fileSafe(tt.in); got != tt.want {
				t.Errorf("fileSafe(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

// A file longer than read_file shows at once is paged by line, also past its first MiB.
func TestReadFileLineRangePastFirstMiB(t *testing.T) {
	s := newSandbox(t)
	var b strings.Builder
	for i := 1; i <= 100_000; i++ {
		fmt.Fprintf(&b, "line %06d %s\n", i, strings.Repeat("x", 20))
	}
	if b.Len() <= maxReadBytes {
		t.Fatalf("test file is %d bytes; want more than %d", b.Len(), maxReadBytes)
	}
	if err := os.WriteFile(filepath.Join(s.ws, "long.txt"), []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := run(t, "read_file", s.ws, map[string]any{"path": "long.txt", "start_line": 99_999, "end_line": 100_000}, Limits{})
	want := "[lines 99999-100000 of 100000 in long.txt]\nline 099999 " + strings.Repeat("x", 20) + "\nline 100000 " + strings.Repeat("x", 20)
	if err != nil || out != want {
		t.Fatalf("got %q, %v; want %q", out, err, want)
	}
}
