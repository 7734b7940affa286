package effect

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/agentd/agentd/commands/shell"
	"github.com/agentd/agentd/internal/testutil"
)

// quotaMounted is b with its quota of size bytes mounted, skipping where the daemon may
// not mount one (no user namespaces for a daemon that is not root): there the watch
// alone bounds a run ahead.
func quotaMounted(t *testing.T, f *fixture, size int64) *diskBound {
	t.Helper()
	view := filepath.Join(f.dir, "a-1", "view")
	if err := os.MkdirAll(view, 0o700); err != nil {
		t.Fatal(err)
	}
	b, err := f.p.bound("a-1", view, 64<<20, 0)
	if err != nil {
		t.Fatal(err)
	}
	if why := b.mountQuota(view, size); b.q == nil {
		t.Skipf("no quota here (euid %d: %s): a run ahead is bounded by the watch alone", os.Geteuid(), why)
	}
	t.Cleanup(func() { b.q.unmount() })
	return b
}

// mountsUnder lists what is mounted under dir.
func mountsUnder(t *testing.T, dir string) []string {
	t.Helper()
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) > 4 && strings.HasPrefix(f[4], dir) {
			out = append(out, f[4])
		}
	}
	return out
}

// Under the quota the kernel stops a writer at the room: a write past it fails with
// ENOSPC, however fast it comes and whatever the watch sees, so the disk never holds
// more than the room of what it wrote; the copy itself is never written, and unmounting
// drops what the run wrote.
func TestTheQuotaStopsAWriterAtTheRoomAndKeepsNothing(t *testing.T) {
	testutil.AsRootAndNot(t, func(t *testing.T) {
		f := newFixture(t, shell.Options{})
		const room = 1 << 20
		b := quotaMounted(t, f, room)
		out, err := os.Create(filepath.Join(b.view, "big.bin"))
		if err != nil {
			t.Fatal(err)
		}
		chunk := make([]byte, 64<<10)
		var wrote int64
		for wrote < 64<<20 {
			n, err := out.Write(chunk)
			wrote += int64(n)
			if err != nil {
				if !errors.Is(err, syscall.ENOSPC) {
					t.Fatalf("the write past the room failed with %v, want ENOSPC", err)
				}
				break
			}
		}
		out.Close()
		if wrote > room || wrote < room/2 {
			t.Errorf("the writer wrote %d bytes under a %d-byte quota, want it stopped at the room", wrote, room)
		}
		if !b.q.full() {
			t.Error("the quota does not say it is full after the kernel refused a write")
		}
		if err := b.q.unmount(); err != nil {
			t.Fatal(err)
		}
		if _, err := os.Lstat(filepath.Join(f.dir, "a-1", "view", "big.bin")); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("what the writer wrote is in the copy after the quota went (%v)", err)
		}
		if m := mountsUnder(t, f.dir); len(m) > 0 {
			t.Errorf("still mounted after unmount: %v", m)
		}
	})
}

// A run ahead that writes past its room under the quota is stopped and told why, as the
// watch would: no preview, nothing kept in the copy, nothing left mounted, and the
// workspace untouched. Its writes never reached the disk past the room (the test above).
func TestARunAheadPastItsRoomUnderTheQuotaGetsNoPreviewSayingWhy(t *testing.T) {
	testutil.AsRootAndNot(t, func(t *testing.T) {
		f := newFixture(t, shell.Options{})
		quotaMounted(t, f, 1<<20).q.unmount() // skips where there is no quota
		before := tree(t, f.ws)
		f.room = 2 << 20
		eff, _ := f.run(t, "head -c 67108864 /dev/zero > big.bin; echo the writer went on")
		if eff.Appliable() || !strings.Contains(eff.None, "its run ahead wrote past the 2 MiB") || !strings.Contains(eff.None, "it was stopped") {
			t.Fatalf("preview: %+v, want no preview saying the run ahead wrote past the room and was stopped", eff)
		}
		if _, err := os.Lstat(filepath.Join(f.dir, "a-1", "view", "big.bin")); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("what the run ahead wrote is in the copy (%v)", err)
		}
		if m := mountsUnder(t, f.dir); len(m) > 0 {
			t.Errorf("still mounted after the preview: %v", m)
		}
		if after := tree(t, f.ws); after != before {
			t.Errorf("the preview changed the workspace:\nbefore:\n%s\nafter:\n%s", before, after)
		}
	})
}

// A daemon that is not root keeps a run ahead's writes in a tmpfs no memory cgroup
// charges to the box: the box's memory limit bounds it, whatever disk the budget leaves,
// so a run ahead cannot turn its disk budget into memory past its limit. As root the
// box is charged what its programs write there, and the disk room is the bound.
func TestARunAheadsWritesKeptInMemoryAreBoundedByItsMemoryLimit(t *testing.T) {
	if testutil.AsUnprivileged(t) {
		return
	}
	f := newFixture(t, shell.Options{Limits: shell.Limits{Memory: 64 << 20}})
	quotaMounted(t, f, 1<<20).q.unmount() // skips where there is no quota
	f.room = 1 << 30
	eff, _ := f.run(t, "for n in 1 2 3 4; do head -c 52428800 /dev/zero > big$n.bin || exit 1; done; echo the writer went on")
	if eff.Appliable() || !strings.Contains(eff.None, "wrote past the 64 MiB of memory its box may take") || !strings.Contains(eff.None, "it was stopped") {
		t.Fatalf("preview: %+v, want no preview saying the run ahead wrote past the box's memory and was stopped", eff)
	}
	if m := mountsUnder(t, f.dir); len(m) > 0 {
		t.Errorf("still mounted after the preview: %v", m)
	}
	if eff, _ := f.run(t, "head -c 20971520 /dev/zero > small.bin"); !eff.Appliable() {
		t.Fatalf("preview of 20 MiB written ahead: %+v, want it shown and appliable", eff)
	}
}

// A quota a daemon that died during a run ahead left mounted is dropped before the next
// preview writes its copy: the preview shows the change of its own command only, and
// leaves nothing mounted.
func TestAQuotaLeftMountedByADeadDaemonIsDroppedFirst(t *testing.T) {
	f := newFixture(t, shell.Options{})
	b := quotaMounted(t, f, 1<<20)
	if err := os.WriteFile(filepath.Join(b.view, "stale.txt"), []byte("left by the dead run\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	eff, diff := f.run(t, "echo three >> notes.txt")
	if !eff.Appliable() || eff.Summary != "changes 1 file (+1 −0)" || strings.Contains(diff, "stale") {
		t.Fatalf("preview after a stale quota: %+v\n%s\nwant only the command's own change", eff, diff)
	}
	if m := mountsUnder(t, f.dir); len(m) > 0 {
		t.Errorf("still mounted after the preview: %v", m)
	}
}

// Under the quota a preview makes no copy of the workspace: the run ahead's overlay has
// the workspace itself as its lower layer, so the copy's folder stays empty, and the
// change is still the command's own, read from the overlay's upper layer.
func TestUnderTheQuotaAPreviewMakesNoCopyOfTheWorkspace(t *testing.T) {
	testutil.AsRootAndNot(t, func(t *testing.T) {
		f := newFixture(t, shell.Options{})
		quotaMounted(t, f, 1<<20).q.unmount() // skips where there is no quota
		before := tree(t, f.ws)
		eff, diff := f.run(t, "echo three >> notes.txt; rm old.txt")
		if !eff.Appliable() || eff.Summary != "changes 2 files (+1 −1)" || !strings.Contains(diff, "+three") {
			t.Fatalf("preview: %+v\n%s", eff, diff)
		}
		if names, err := os.ReadDir(filepath.Join(f.dir, "a-1", "view")); err != nil || len(names) > 0 {
			t.Errorf("the copy's folder holds %v (%v), want nothing: no copy under the quota", names, err)
		}
		if m := mountsUnder(t, f.dir); len(m) > 0 {
			t.Errorf("still mounted after the preview: %v", m)
		}
		if after := tree(t, f.ws); after != before {
			t.Errorf("the preview changed the workspace:\nbefore:\n%s\nafter:\n%s", before, after)
		}
	})
}

// The quota's lower layer is the folder the one resolver opened, by its descriptor: a
// workspace whose path goes through a link (one swapped in after the checks) gets no
// quota over the tree the link leads to, and the preview falls back to its copy.
func TestAQuotaIsNeverMountedOverAWorkspaceReachedThroughALink(t *testing.T) {
	testutil.AsRootAndNot(t, func(t *testing.T) {
		f := newFixture(t, shell.Options{})
		view := filepath.Join(f.dir, "a-1", "view")
		elsewhere, link := filepath.Join(f.dir, "elsewhere"), filepath.Join(f.dir, "ws")
		if err := errors.Join(os.MkdirAll(view, 0o700), os.MkdirAll(elsewhere, 0o700),
			os.WriteFile(filepath.Join(elsewhere, "lookalike"), []byte("x"), 0o600), os.Symlink(elsewhere, link)); err != nil {
			t.Fatal(err)
		}
		b, err := f.p.bound("a-1", view, 64<<20, 0)
		if err != nil {
			t.Fatal(err)
		}
		b.mountQuota(link, 1<<20)
		if b.q != nil {
			b.q.unmount()
			t.Fatal("a quota was mounted over the tree a link in the workspace's path leads to")
		}
		if m := mountsUnder(t, f.dir); len(m) != 0 {
			t.Fatalf("mounted under the daemon's folder: %v", m)
		}
	})
}
