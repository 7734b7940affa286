//go:build unix

package memory

import (
	"os"
	"syscall"
)

// mapFile maps size bytes of f read-only and shared, so appends show through. Bytes past
// the end of the file must not be touched.
func mapFile(f *os.File, size int64) ([]byte, error) {
	return syscall.Mmap(int(f.Fd()), 0, int(size), syscall.PROT_READ, syscall.MAP_SHARED)
}

func unmapFile(b []byte) { _ = syscall.Munmap(b) }
