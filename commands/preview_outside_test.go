package commands

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

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
