package commands

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"
)

// DiskUsage counts what a workspace takes on disk: data written, empty files at a block
// each (their inodes are disk too), a hard-linked file once, and nothing a link points to.
func TestDiskUsage(t *testing.T) {
	ws, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	empty, err := DiskUsage(ws)
	if err != nil || empty != MinEntryBytes && empty%MinEntryBytes != 0 {
		t.Fatalf("empty workspace: %d, %v", empty, err)
	}
	if err := os.WriteFile(filepath.Join(ws, "data"), make([]byte, 1<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	os.MkdirAll(filepath.Join(ws, "a", "b"), 0o755)
	for i := range 100 {
		os.WriteFile(filepath.Join(ws, "a", "b", "empty"+strconv.Itoa(i)), nil, 0o644)
	}
	os.Link(filepath.Join(ws, "data"), filepath.Join(ws, "a", "data-again"))
	outside := t.TempDir()
	os.WriteFile(filepath.Join(outside, "big"), make([]byte, 4<<20), 0o644)
	os.Symlink(outside, filepath.Join(ws, "link-out"))

	got, err := DiskUsage(ws)
	if err != nil {
		t.Fatal(err)
	}
	low := empty + 1<<20 + 100*MinEntryBytes // the data, once, and a block per empty file
	if got < low || got > low+64*MinEntryBytes {
		t.Errorf("DiskUsage = %d, want about %d: 1 MiB of data counted once, 100 empty files, not the 4 MiB a link points to", got, low)
	}
}

// BenchmarkDiskUsage measures a workspace of 10,000 files in 100 folders, as the disk
// budget does after each command that may write.
func BenchmarkDiskUsage(b *testing.B) {
	ws, err := filepath.EvalSymlinks(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	for i := range 10000 {
		dir := filepath.Join(ws, "d"+strconv.Itoa(i%100))
		os.MkdirAll(dir, 0o755)
		os.WriteFile(filepath.Join(dir, "f"+strconv.Itoa(i)), []byte("x"), 0o644)
	}
	for b.Loop() {
		if _, err := DiskUsage(ws); err != nil {
			b.Fatal(err)
		}
	}
}
