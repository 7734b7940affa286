package effect

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentd/agentd/commands"
	"github.com/agentd/agentd/commands/shell"
)

// A run ahead is bounded by the disk the agent's budget leaves a preview: a workspace
// whose copy would not fit is not copied, and a command that writes past the bound —
// still writing when it is looked at, or done before — is stopped, gets no preview
// saying why, and leaves nothing in the copy; the workspace itself is untouched.
func TestPreviewIsBoundedByTheDiskItsBudgetLeaves(t *testing.T) {
	for _, c := range []struct {
		name, line string
		room       int64
		workspace  int // bytes of one more file in the workspace
		want       string
	}{
		{"copy_would_not_fit", "touch x", 150 << 10, 100 << 10, "would not fit in the 150 KiB of disk"},
		{"copy_and_store_take_more", "touch x", 16 << 10, 0, "its copy of the workspace and its checkpoints take"},
		{"still_writing_is_stopped", "head -c 8388608 /dev/zero > big.bin; sleep 60", 2 << 20, 0, "its run ahead wrote past the 2 MiB"},
		{"wrote_past_before_it_ended", "head -c 8388608 /dev/zero > big.bin", 2 << 20, 0, "its run ahead wrote past the 2 MiB"},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := newFixture(t, shell.Options{})
			if c.workspace > 0 {
				write(t, f.ws, map[string]string{"data.bin": strings.Repeat("d", c.workspace)})
			}
			before := tree(t, f.ws)
			f.room = c.room
			eff, _ := f.run(t, c.line)
			if eff.Appliable() || !strings.Contains(eff.None, c.want) {
				t.Fatalf("preview: %+v, want no preview saying %q", eff, c.want)
			}
			if _, err := os.Lstat(filepath.Join(f.dir, "a-1", "view", "big.bin")); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("what the run ahead wrote is still in the copy (%v)", err)
			}
			if after := tree(t, f.ws); after != before {
				t.Errorf("the preview changed the workspace:\nbefore:\n%s\nafter:\n%s", before, after)
			}
		})
	}
}

// Sparse files take a few blocks in the copy but their whole size in the store that
// would capture them: a run ahead that writes them past the room its budget leaves gets
// no preview, and neither the copy nor the store keeps what it wrote.
func TestSparseFilesAreBoundedByTheirFullSize(t *testing.T) {
	f := newFixture(t, shell.Options{})
	f.room = 2 << 20
	before, _ := commands.DiskUsage(f.dir)
	eff, _ := f.run(t, `for i in 1 2 3 4 5 6 7 8; do truncate -s 8M s$i && printf $i | dd of=s$i bs=1 seek=4096 conv=notrunc 2>/dev/null; done`)
	after, _ := commands.DiskUsage(f.dir)
	if eff.Appliable() || !strings.Contains(eff.None, "past its limit") {
		t.Errorf("64 MiB of sparse files against a 2 MiB room: appliable=%v, none=%q; want no preview, saying why", eff.Appliable(), eff.None)
	}
	if after-before > f.room {
		t.Errorf("the preview took %d KiB of disk, over its %d KiB room", (after-before)>>10, f.room>>10)
	}
}
