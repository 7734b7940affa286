package commands

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestContextItemsKeepTheirTarget checks that an open file or folder, shown again at every
// step without asking, keeps showing what was approved when it was opened: a link swapped
// in between two steps (by the shell, or a helper in agents/) that points the same path
// at another file of the workspace is not followed there.
func TestContextItemsKeepTheirTarget(t *testing.T) {
	tests := []struct {
		name, kind, path string
		before, after    string // what path is (a link target, or "" for a plain file) at open and later
		wantShown        bool
	}{
		{name: "file_relinked", kind: "open_file", path: "pub/k", before: "../docs/readme.txt", after: "../private/key"},
		{name: "plain_file_replaced_by_link", kind: "open_file", path: "pub/k", before: "", after: "../private/key"},
		{name: "folder_relinked", kind: "open_folder", path: "pub/d", before: "../docs", after: "../private"},
		{name: "same_link_kept", kind: "open_file", path: "pub/k", before: "../docs/readme.txt", after: "../docs/readme.txt", wantShown: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newSandbox(t)
			for _, d := range []string{"pub", "private"} {
				os.MkdirAll(filepath.Join(s.ws, d), 0o755)
			}
			os.WriteFile(filepath.Join(s.ws, "private/key"), []byte("private-key-content\n"), 0o600)
			p := filepath.Join(s.ws, tt.path)
			place := func(target string) {
				os.RemoveAll(p)
				if target == "" {
					os.WriteFile(p, []byte("plain\n"), 0o644)
					return
				}
				if err := os.Symlink(target, p); err != nil {
					t.Fatal(err)
				}
			}
			place(tt.before)
			st := memState{}
			step := &Step{Workspace: s.ws, State: st, Now: time.Now(), Budget: 5000}
			cmds, _ := ContextItems{}.Commands(context.Background(), step)
			cmd, _ := Set(cmds).Get(tt.kind)
			if _, err := Run(context.Background(), cmd, Env{Workspace: s.ws, State: st}, json.RawMessage(`{"path":"`+tt.path+`"}`), Limits{}); err != nil {
				t.Fatal(err)
			}
			place(tt.after)
			msgs, err := ContextItems{}.Messages(context.Background(), step)
			if err != nil || len(msgs) != 1 {
				t.Fatalf("messages %q, %v", msgs, err)
			}
			if leaked := strings.Contains(msgs[0], "private-key-content") || strings.Contains(msgs[0], "\nkey"); leaked {
				t.Errorf("the open item followed the new link:\n%s", msgs[0])
			}
			if shown := strings.Contains(msgs[0], "hello"); shown != tt.wantShown {
				t.Errorf("content shown %v, want %v:\n%s", shown, tt.wantShown, msgs[0])
			}
		})
	}
}
