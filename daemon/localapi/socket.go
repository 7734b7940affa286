package localapi

import (
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"syscall"
	"time"
)

// maxSocketPath is the longest path a unix socket may have on Linux (sun_path is 108
// bytes with the trailing NUL); bind's own error for a longer one is a bare EINVAL.
const maxSocketPath = 107

// Listen listens on the unix socket at path, mode 0600, creating its directory (0700) if
// missing. A socket file left by a dead daemon is replaced; one that still answers is not,
// and a file there that is not a socket is never removed.
func Listen(path string) (net.Listener, error) {
	if path == "" {
		return nil, errors.New("api: no socket path")
	}
	if len(path) > maxSocketPath {
		return nil, fmt.Errorf("api: socket path %s is %d bytes; unix sockets allow at most %d", path, len(path), maxSocketPath)
	}
	if err := socketDir(filepath.Dir(path)); err != nil {
		return nil, err
	}
	if err := removeStale(path); err != nil {
		return nil, err
	}
	// There is a window between the dial in removeStale and this listen where a second
	// daemon could start; the 0700 directory keeps that to one user's own processes.
	ln, err := net.Listen("unix", path)
	if err != nil {
		return nil, fmt.Errorf("api: %w", err)
	}
	if err := os.Chmod(path, 0o600); err != nil {
		ln.Close()
		return nil, fmt.Errorf("api: %w", err)
	}
	return ln, nil
}

// socketDir makes dir (0700) if it is missing, and refuses one that another user could
// swap the socket out of: it must be ours or root's, and if others may write to it, sticky.
func socketDir(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("api: socket directory: %w", err)
	}
	fi, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("api: socket directory: %w", err)
	}
	if !fi.IsDir() {
		return fmt.Errorf("api: socket directory %s is not a directory", dir)
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return nil
	}
	if uid := int(st.Uid); uid != os.Getuid() && uid != 0 {
		return fmt.Errorf("api: socket directory %s belongs to uid %d, not to this user (uid %d)", dir, uid, os.Getuid())
	}
	if fi.Mode().Perm()&0o022 != 0 && fi.Mode()&fs.ModeSticky == 0 {
		return fmt.Errorf("api: socket directory %s is writable by others (mode %04o); use chmod 700 %s", dir, fi.Mode().Perm(), dir)
	}
	return nil
}

// removeStale removes a socket file nobody answers on, the way tailscale's safesocket
// does: dial first, and only a refused connection proves the file stale.
func removeStale(path string) error {
	fi, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("api: %w", err)
	}
	if fi.Mode().Type() != fs.ModeSocket {
		return fmt.Errorf("api: %s exists and is not a socket; remove it or choose another socket path", path)
	}
	c, err := net.DialTimeout("unix", path, time.Second)
	if err == nil {
		c.Close()
		return fmt.Errorf("api: another agentd is already listening on %s", path)
	}
	if !errors.Is(err, syscall.ECONNREFUSED) {
		return fmt.Errorf("api: checking for a daemon on %s: %w", path, err)
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("api: removing stale socket: %w", err)
	}
	return nil
}
