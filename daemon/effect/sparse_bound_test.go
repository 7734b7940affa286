package effect

import (
	"strings"
	"testing"

	"github.com/agentd/agentd/commands"
	"github.com/agentd/agentd/commands/shell"
)

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
