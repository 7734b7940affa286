package commands

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentd/agentd/api"
)

// previewOf asks the registered command name for its preview of args in workspace ws.
func previewOf(t *testing.T, name, ws string, args any) *api.Preview {
	t.Helper()
	c, ok := Lookup(name)
	if !ok {
		t.Fatalf("%s is not registered", name)
	}
	b, err := json.Marshal(args)
	if err != nil {
		t.Fatal(err)
	}
	return Preview(context.Background(), c, Env{Workspace: ws, AgentID: "a1"}, b)
}

func TestFilePreviews(t *testing.T) {
	s := newSandbox(t)
	write := func(name, text string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(s.ws, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("notes.md", "# Notes\n\none\ntwo\nthree\nfour\nfive\nsix\nseven\neight\n")
	write("bin.dat", "\x7fELF\x00\x01\x02")
	write("empty.txt", "")
	write("tail.txt", "no newline")
	if err := os.Link(filepath.Join(s.outside, "secret.txt"), filepath.Join(s.ws, "hard.txt")); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		command string
		args    map[string]string
		diff    string // the whole diff, or "" for none
		note    string // a part of the note, or "" for none
	}{
		{"new_file", "write_file", map[string]string{"path": "docs/new.txt", "contents": "a\nb\n"},
			"--- /dev/null\n+++ b/docs/new.txt\n@@ -0,0 +1,2 @@\n+a\n+b\n", ""},
		{"edited_file", "write_file", map[string]string{"path": "notes.md", "contents": "# Notes\n\none\nTWO\nthree\nfour\nfive\nsix\nseven\neight!\n"},
			// Five unchanged lines apart: one hunk, as diff -u makes it (it splits past 2×3).
			"--- a/notes.md\n+++ b/notes.md\n@@ -1,10 +1,10 @@\n # Notes\n \n one\n-two\n+TWO\n three\n four\n five\n" +
				" six\n seven\n-eight\n+eight!\n", ""},
		{"unchanged_file", "write_file", map[string]string{"path": "notes.md", "contents": "# Notes\n\none\ntwo\nthree\nfour\nfive\nsix\nseven\neight\n"},
			"", "no change"},
		{"append", "append_to_file", map[string]string{"path": "notes.md", "text": "nine\n"},
			"--- a/notes.md\n+++ b/notes.md\n@@ -8,3 +8,4 @@\n six\n seven\n eight\n+nine\n", ""},
		{"append_no_newline", "append_to_file", map[string]string{"path": "tail.txt", "text": "!\n"},
			"--- a/tail.txt\n+++ b/tail.txt\n@@ -1 +1 @@\n-no newline\n\\ No newline at end of file\n+no newline!\n", ""},
		{"delete", "delete_file", map[string]string{"path": "docs/readme.txt"},
			"--- a/docs/readme.txt\n+++ /dev/null\n@@ -1 +0,0 @@\n-hello\n\\ No newline at end of file\n", ""},
		{"delete_empty", "delete_file", map[string]string{"path": "empty.txt"}, "", "empty"},
		{"delete_missing", "delete_file", map[string]string{"path": "gone.txt"}, "", "does not exist"},
		{"delete_link_out", "delete_file", map[string]string{"path": "secret"}, "", "removes the link only"},
		{"binary_file", "write_file", map[string]string{"path": "bin.dat", "contents": "text"}, "", "binary (7 bytes)"},
		{"binary_contents", "write_file", map[string]string{"path": "x.txt", "contents": "a\x00b"}, "", "not text"},
		{"symlink_out", "write_file", map[string]string{"path": "secret", "contents": "x"}, "", "no diff: path"},
		{"symlink_dir_out", "append_to_file", map[string]string{"path": "out/secret.txt", "text": "x"}, "", "no diff: path"},
		{"dotdot_out", "write_file", map[string]string{"path": "../outside/secret.txt", "contents": "x"}, "", "leaves the workspace"},
		{"dotdot_through_link", "write_file", map[string]string{"path": "docs/up/outside/secret.txt", "contents": "x"}, "", "no diff: path"},
		{"hard_link_out", "append_to_file", map[string]string{"path": "hard.txt", "text": "x"}, "", "hard links"},
		{"absolute_etc", "delete_file", map[string]string{"path": "passwd"}, "", "removes the link only"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pv := previewOf(t, tt.command, s.ws, tt.args)
			if pv == nil || pv.Kind != api.PreviewDiff || pv.Path != tt.args["path"] {
				t.Fatalf("preview = %+v, want a diff of %s", pv, tt.args["path"])
			}
			if pv.Diff != tt.diff {
				t.Errorf("diff =\n%s\nwant\n%s", pv.Diff, tt.diff)
			}
			if tt.note == "" && pv.Note != "" || !strings.Contains(pv.Note, tt.note) {
				t.Errorf("note = %q, want one with %q", pv.Note, tt.note)
			}
			checkNoLeak(t, pv.Diff, errors.New(pv.Note)) // a note may echo the path given
		})
	}
}

// TestFilePreviewChangesNothing: working out a preview writes, creates and deletes nothing.
func TestFilePreviewChangesNothing(t *testing.T) {
	s := newSandbox(t)
	before := s.snapshot(t)
	ws := wsSnapshot(t, s.ws)
	previewOf(t, "write_file", s.ws, map[string]string{"path": "new/dir/a.txt", "contents": "x"})
	previewOf(t, "append_to_file", s.ws, map[string]string{"path": "docs/readme.txt", "text": "x"})
	previewOf(t, "delete_file", s.ws, map[string]string{"path": "docs/readme.txt"})
	previewOf(t, "write_file", s.ws, map[string]string{"path": "dangling", "contents": "x"})
	s.checkUntouched(t, before)
	if got := wsSnapshot(t, s.ws); got != ws {
		t.Errorf("the workspace changed:\n%s\nwas\n%s", got, ws)
	}
}

// wsSnapshot lists the workspace's names and file contents.
func wsSnapshot(t *testing.T, ws string) string {
	t.Helper()
	var b strings.Builder
	filepath.Walk(ws, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		b.WriteString(p + " " + fi.Mode().String())
		if fi.Mode().IsRegular() {
			data, _ := os.ReadFile(p)
			b.Write(data)
		}
		b.WriteString("\n")
		return nil
	})
	return b.String()
}

// TestFilePreviewCapsHugeDiffs: a diff past MaxPreviewDiff is cut on a line and says so;
// a file past the diffed size gets a note instead.
func TestFilePreviewCapsHugeDiffs(t *testing.T) {
	ws := t.TempDir()
	line := strings.Repeat("x", 99) + "\n"
	pv := previewOf(t, "write_file", ws, map[string]string{"path": "big.txt", "contents": strings.Repeat(line, 1000)})
	if !pv.DiffCut || len(pv.Diff) > api.MaxPreviewDiff || !strings.HasSuffix(pv.Diff, "\n") {
		t.Errorf("diff of %d bytes, cut %v: want cut on a line under %d", len(pv.Diff), pv.DiffCut, api.MaxPreviewDiff)
	}
	if err := os.WriteFile(filepath.Join(ws, "huge.txt"), []byte(strings.Repeat(line, 11000)), 0o644); err != nil {
		t.Fatal(err)
	}
	pv = previewOf(t, "append_to_file", ws, map[string]string{"path": "huge.txt", "text": "y\n"})
	if pv.Diff != "" || !strings.Contains(pv.Note, "too big to diff") {
		t.Errorf("huge file: diff %d bytes, note %q", len(pv.Diff), pv.Note)
	}
}

// TestUnifiedDiffMatchesDiffU: changes more than 2×3 lines apart make two hunks, with
// the ranges GNU diff -u writes for the same change.
func TestUnifiedDiffMatchesDiffU(t *testing.T) {
	before := "a\nb\nc\nd\ne\nf\ng\nh\ni\nj\nk\nl\nm\nn\n"
	after := "a\nB\nc\nd\ne\nf\ng\nh\ni\nj\nk\nl\nm\nn\no\n"
	got := UnifiedDiff("a/f", "b/f", before, after)
	want := "--- a/f\n+++ b/f\n@@ -1,5 +1,5 @@\n a\n-b\n+B\n c\n d\n e\n@@ -12,3 +12,4 @@\n l\n m\n n\n+o\n"
	if got != want {
		t.Errorf("diff =\n%s\nwant (diff -u's hunks)\n%s", got, want)
	}
}

// BenchmarkFilePreview: the preview of a one-line edit to a 2,000-line file, the cost
// added to a write_file proposal before it is stored.
func BenchmarkFilePreview(b *testing.B) {
	ws := b.TempDir()
	var old strings.Builder
	for i := range 2000 {
		old.WriteString("line " + strings.Repeat("x", i%70) + "\n")
	}
	if err := os.WriteFile(filepath.Join(ws, "big.txt"), []byte(old.String()), 0o644); err != nil {
		b.Fatal(err)
	}
	next := strings.Replace(old.String(), "line xxxxxxxxxx\n", "line changed\n", 1)
	c, _ := Lookup("write_file")
	raw, _ := json.Marshal(map[string]string{"path": "big.txt", "contents": next})
	env := Env{Workspace: ws}
	for b.Loop() {
		if pv := Preview(context.Background(), c, env, raw); pv.Diff == "" {
			b.Fatal("no diff")
		}
	}
}

// panicky is a command whose preview panics.
type panicky struct{ specCmd }

func (panicky) Preview(context.Context, Env, json.RawMessage) *api.Preview { panic("boom") }

// TestPreviewPanicIsANote: a previewer that panics gives a note, not a dead proposal; a
// command without a previewer gives nil.
func TestPreviewPanicIsANote(t *testing.T) {
	pv := Preview(context.Background(), panicky{specCmd{finishSpec}}, Env{}, nil)
	if pv == nil || !strings.Contains(pv.Note, "boom") {
		t.Errorf("preview = %+v, want a note naming the panic", pv)
	}
	finish, _ := Lookup(Finish)
	if pv := Preview(context.Background(), finish, Env{}, nil); pv != nil {
		t.Errorf("finish has a preview: %+v", pv)
	}
}

// A write_file/delete_file preview never shows a file from outside the workspace.
func TestPreviewNeverShowsFileOutsideWorkspace(t *testing.T) {
	dir := t.TempDir()
	ws, out := filepath.Join(dir, "ws"), filepath.Join(dir, "out")
	os.MkdirAll(filepath.Join(ws, "sub"), 0o755)
	os.MkdirAll(out, 0o755)
	secret := filepath.Join(out, "secret.txt")
	os.WriteFile(secret, []byte("TOPSECRET\n"), 0o644)
	os.Symlink(secret, filepath.Join(ws, "link.txt"))
	os.Symlink(out, filepath.Join(ws, "dirlink"))
	os.Link(secret, filepath.Join(ws, "hard.txt"))
	paths := []string{"link.txt", "dirlink/secret.txt", "../out/secret.txt", "sub/../../out/secret.txt", secret,
		"hard.txt", "/proc/self/root" + secret, "./link.txt", "sub/../link.txt", "dirlink/../out/secret.txt"}
	env := Env{Workspace: ws}
	for _, p := range paths {
		args, _ := json.Marshal(map[string]string{"path": p, "contents": "x\n"})
		for name, c := range map[string]Command{"write_file": writeFile{}, "delete_file": deleteFile{}} {
			pv := Preview(context.Background(), c, env, args)
			if pv != nil && strings.Contains(pv.Diff+pv.Note, "TOPSECRET") {
				t.Errorf("%s %q showed outside content: %+v", name, p, pv)
			} else if pv != nil {
				t.Logf("%s %q note=%q", name, p, pv.Note)
			}
		}
	}
}
