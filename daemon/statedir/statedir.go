// Package statedir keeps agentd's state directory private: the database, its WAL, the
// memory index and whatever else the daemon keeps there hold every agent's history and
// what people approved. The server calls Secure at every start (fixing what an older
// version or a copy left open), and doctor calls Check.
//
// Agents' workspaces may live inside the state directory (<state>/workspaces by
// default): their directory is made private too, but the files in it are the agents'
// work and keep the modes the agents gave them.
package statedir

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// Modes the state directory's contents get.
const (
	DirMode  fs.FileMode = 0o700
	FileMode fs.FileMode = 0o600
	// Umask is what the daemon creates files with from then on: for the owner alone.
	Umask = 0o077
)

// Secure creates dir if needed, sets umask 077 for the whole process, and makes dir and
// every directory beneath it 0700 and every regular file 0600, leaving the contents of
// workspaces (a directory beneath dir, or anywhere else) alone. Links are not followed.
func Secure(dir, workspaces string) error {
	syscall.Umask(Umask)
	if err := os.MkdirAll(dir, DirMode); err != nil {
		return fmt.Errorf("state dir: %w", err)
	}
	return walk(dir, workspaces, func(path string, mode fs.FileMode, want fs.FileMode) error {
		if err := os.Chmod(path, want); err != nil {
			return fmt.Errorf("state dir: making %s private: %w (agentd must own what is in its state directory)", path, err)
		}
		return nil
	})
}

// Check returns the paths in dir (workspace contents left aside) that others may read,
// write or enter, at most max of them (max <= 0: all).
func Check(dir, workspaces string, max int) ([]string, error) {
	var open []string
	errEnough := errors.New("enough")
	err := walk(dir, workspaces, func(path string, _ fs.FileMode, _ fs.FileMode) error {
		open = append(open, path)
		if max > 0 && len(open) >= max {
			return errEnough
		}
		return nil
	})
	if errors.Is(err, errEnough) {
		err = nil
	}
	return open, err
}

// walk calls fix for dir and each directory and regular file beneath it whose mode grants
// anything to group or others (want: the mode it should have), skipping what is inside
// workspaces.
func walk(dir, workspaces string, fix func(path string, mode, want fs.FileMode) error) error {
	// A state dir that is a link (/var/lib/agentd → /srv/agentd) is walked where it leads;
	// links beneath it are not followed.
	if real, err := filepath.EvalSymlinks(dir); err == nil {
		if wsReal, err := filepath.EvalSymlinks(workspaces); err == nil {
			workspaces = wsReal
		}
		dir = real
	}
	ws := filepath.Clean(workspaces)
	return filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.Type().IsDir() && !d.Type().IsRegular() {
			return nil // links (never followed), the socket, fifos
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		want := FileMode
		if d.IsDir() {
			want = DirMode
		}
		if info.Mode().Perm()&0o077 != 0 || info.Mode()&(fs.ModeSetuid|fs.ModeSetgid) != 0 {
			if err := fix(path, info.Mode(), want); err != nil {
				return err
			}
		}
		if d.IsDir() && workspaces != "" && filepath.Clean(path) == ws {
			return filepath.SkipDir // the workspaces directory is private; its contents are the agents'
		}
		return nil
	})
}
