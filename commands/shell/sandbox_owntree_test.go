package shell

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestOwnTreeCostIsLinear checks that the chown walk before a run as root costs in
// proportion to what the workspace holds, however deep: a chain of folders the agent's
// shell made 2000 levels down must not make the daemon (as root, before every command,
// outside the command's timeout) resolve every path again from the workspace's top.
func TestOwnTreeCostIsLinear(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("the workspace is chowned only when agentd runs as root")
	}
	tests := []struct {
		name  string
		depth int
		files int // in the deepest folder
	}{
		{name: "deep_chain", depth: 2000},
		{name: "deep_chain_with_files", depth: 1000, files: 50},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ws := workspace(t)
			fd, err := unix.Open(ws, unix.O_DIRECTORY|unix.O_RDONLY, 0)
			if err != nil {
				t.Fatal(err)
			}
			for i := 0; i < tt.depth; i++ {
				if err := unix.Mkdirat(fd, "d", 0o755); err != nil {
					t.Fatal(err)
				}
				next, err := unix.Openat(fd, "d", unix.O_DIRECTORY|unix.O_RDONLY, 0)
				unix.Close(fd)
				if err != nil {
					t.Fatal(err)
				}
				fd = next
			}
			for i := 0; i < tt.files; i++ {
				f, err := unix.Openat(fd, "f"+string(rune('a'+i%26))+string(rune('a'+i/26)), unix.O_CREAT|unix.O_WRONLY, 0o644)
				if err != nil {
					t.Fatal(err)
				}
				unix.Close(f)
			}
			unix.Close(fd)
			root, err := os.OpenRoot(ws)
			if err != nil {
				t.Fatal(err)
			}
			defer root.Close()
			start := time.Now()
			if err := ownTree(root, DefaultUID, DefaultUID); err != nil {
				t.Fatal(err)
			}
			if took := time.Since(start); took > 3*time.Second {
				t.Errorf("ownTree took %v on a chain %d deep; want it linear", took, tt.depth)
			}
			// Everything was given away, the deepest folder's files included.
			err = filepath.WalkDir(ws, func(p string, d os.DirEntry, err error) error {
				if err != nil {
					return nil // beyond PATH_MAX for a path walk: checked below by descriptor
				}
				if st := statOf(t, p); st.Uid != DefaultUID {
					t.Errorf("%s is owned by %d", p[len(ws):], st.Uid)
					return filepath.SkipAll
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
		})
	}
}
