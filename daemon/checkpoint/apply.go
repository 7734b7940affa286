package checkpoint

import (
	"context"
	"fmt"
	"path/filepath"
)

// ChangedError is RestoreFrom's answer when the workspace is not as the checkpoint it
// was to start from holds it: Diff says what changed since (From is that checkpoint,
// To the one taken of the workspace now). Nothing was changed.
type ChangedError struct {
	Diff *Diff
}

func (e *ChangedError) Error() string {
	return fmt.Sprintf("the workspace changed since checkpoint %d (%s), so nothing was applied", e.Diff.From, e.Diff.Summary())
}

// RestoreFrom is Restore for a change worked out elsewhere (an effect preview ran a
// command on a copy of checkpoint from, and to is that copy after it): it restores ws
// to checkpoint to only when ws is exactly as checkpoint from holds it, checked on the
// capture the restore takes first, under the store's lock. A workspace already exactly
// at to is left as it is (a restore a crash interrupted was finished since: applying
// again is harmless). Otherwise it returns a *ChangedError and changes nothing.
func (s *Store) RestoreFrom(ctx context.Context, ws string, from, to ID) (*Restored, error) {
	err := s.begin(ctx)
	defer s.mu.Unlock()
	if err != nil {
		return nil, err
	}
	if _, err := s.readRecord(from); err != nil {
		return nil, err
	}
	return s.restore(ctx, ws, to, from)
}

// sameTree reports whether trees a and b hold the same paths, types, modes and
// contents (their stat data may differ).
func (s *Store) sameTree(a, b hash) bool {
	d, err := s.diff(a, b)
	return err == nil && d.Files+d.Folders == 0
}

// unchanged returns a *ChangedError unless before, the workspace just captured, holds
// what checkpoint expect does.
func (s *Store) unchanged(before Info, expect ID) error {
	want, err := s.readRecord(expect)
	if err != nil {
		return err
	}
	if before.root == want.root {
		return nil
	}
	// The trees also differ in stat data (a file just written is marked racy): what
	// counts is a change a diff shows.
	d, err := s.diff(want.root, before.root)
	if err != nil {
		return err
	}
	if d.Files+d.Folders == 0 {
		return nil
	}
	d.From, d.To = expect, before.ID
	return &ChangedError{Diff: d}
}

// RemoveTree removes name in the folder dir and everything beneath it as a restore
// does: following no link, a folder made writable before it is emptied.
func RemoveTree(dir, name string) error {
	ds, err := openRoot(dir)
	if err != nil {
		return err
	}
	defer ds.close()
	if err := removeAt(ds, name, make([]byte, 32<<10)); err != nil {
		return fmt.Errorf("removing %s: %w", filepath.Join(dir, name), err)
	}
	return nil
}
