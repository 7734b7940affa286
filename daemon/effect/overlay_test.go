package effect

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentd/agentd/commands"
	"github.com/agentd/agentd/commands/shell"
	"github.com/agentd/agentd/internal/testutil"
)

// modeTree is tree with each path's type and permission bits.
func modeTree(t *testing.T, dir string) string {
	t.Helper()
	var b strings.Builder
	for _, line := range strings.Split(strings.TrimSuffix(tree(t, dir), "\n"), "\n") {
		rel, _, _ := strings.Cut(strings.TrimSuffix(line, "/"), " ")
		fi, err := os.Lstat(filepath.Join(dir, rel))
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&b, "%v %s\n", fi.Mode(), line)
	}
	return b.String()
}

// The run ahead works on an overlay over the workspace, as root and as a daemon that is
// not root (in a user namespace of its own), never on a copy: the command finds an
// overlay at its working folder and the copy's folder stays empty. What it changes
// through the overlay's upper layer is captured exactly: applying the preview leaves
// the workspace as running the command on it does, for a deletion, a file renamed, a
// folder renamed, a mode changed, and a folder removed and made again (opaque: none of
// its old entries may show through).
func TestRunAheadOverAnOverlayIsCapturedExactly(t *testing.T) {
	testutil.AsRootAndNot(t, func(t *testing.T) {
		f := newFixture(t, shell.Options{})
		twin := filepath.Join(filepath.Dir(f.ws), "twin")
		for _, ws := range []string{f.ws, twin} {
			write(t, ws, map[string]string{"notes.txt": "one\ntwo\n", "old.txt": "gone soon\n", "keep/deep.txt": "deep\n",
				"keep/deeper/x.txt": "x\n", "run.sh": "echo hi\n", "sub/a.txt": "a\n"})
		}
		line := "stat -f -c %T .; rm old.txt; mv notes.txt renamed.txt; mv sub moved; chmod 751 run.sh; rm -rf keep && mkdir keep && echo fresh > keep/fresh.txt"
		eff, diff := f.run(t, line)
		if !eff.Appliable() {
			t.Fatalf("no preview: %+v", eff)
		}
		if !strings.HasPrefix(eff.Output, "overlayfs\n") || eff.Notice != "" {
			t.Errorf("the run ahead worked in a %q with notice %q, want an overlay", strings.SplitN(eff.Output, "\n", 2)[0], eff.Notice)
		}
		if names, err := os.ReadDir(filepath.Join(f.dir, "a-1", "view")); err != nil || len(names) > 0 {
			t.Errorf("the copy's folder holds %v (%v), want nothing: no copy under an overlay", names, err)
		}
		args, _ := json.Marshal(map[string]string{"command_line": line})
		if _, err := commands.Run(context.Background(), f.sh, commands.Env{Workspace: twin, AgentID: "a-1"}, args, commands.Limits{Timeout: time.Minute}); err != nil {
			t.Fatal(err)
		}
		if _, err := f.p.Apply(context.Background(), "a-1", f.ws, eff); err != nil {
			t.Fatal(err)
		}
		if got, want := modeTree(t, f.ws), modeTree(t, twin); got != want {
			t.Errorf("applying the preview made\n%s\nrunning the command made\n%s\ndiff shown:\n%s", got, want, diff)
		}
	})
}
