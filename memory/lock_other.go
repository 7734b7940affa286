//go:build !unix

package memory

import "os"

// lockDir only opens the lock file where flock is not available.
func lockDir(path string) (*os.File, error) {
	return os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
}

func unlockDir(f *os.File) { _ = f.Close() }
