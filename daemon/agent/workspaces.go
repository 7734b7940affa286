package agent

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/agentd/agentd/commands"
	"github.com/agentd/agentd/daemon/store"
)

// Workspaces. Every agent's workspace is a real path with no symlink in it: a top-level
// agent's is <workspace root>/<id>, a helper's <parent's workspace>/agents/<name>. They
// are made and removed through the folder above them, opened by commands.OpenWorkspace,
// so neither a link planted by an agent (ln -s / agents) nor one in a cloned repo sends
// a creation or a recursive removal outside.

// workspaceDirs places agents' workspaces under the workspace root.
type workspaceDirs struct {
	st         *store.Store
	log        *slog.Logger
	configured string // Options.WorkspaceRoot; "" for <state dir>/workspaces
	stateDir   string
	root       wsRoot
}

// wsRoot is the folder that holds top-level agents' workspaces, resolved once: its path
// is the operator's to choose, links included, but what agents reach must not change.
type wsRoot struct {
	once  sync.Once
	given string // as configured, made absolute
	real  string // with its symlinks resolved; given if that failed
}

// workspaceRoots returns the workspace root as configured and as resolved.
func (s *workspaceDirs) workspaceRoots() (given, real string) {
	w := &s.root
	w.once.Do(func() {
		root := s.configured
		if root == "" {
			root = filepath.Join(s.stateDir, "workspaces")
		}
		w.given, _ = filepath.Abs(root)
		w.real = w.given
		if err := os.MkdirAll(w.given, 0o700); err != nil {
			s.log.Warn("agent: cannot make the workspace root", "dir", w.given, "err", err)
		}
		if real, err := filepath.EvalSymlinks(w.given); err == nil {
			w.real = real
		}
	})
	return w.given, w.real
}

// workspace is the workspace path of the top-level agent id.
func (s *workspaceDirs) workspace(id string) string {
	_, root := s.workspaceRoots()
	return filepath.Join(root, id)
}

// resolveWorkspaces rewrites, once at start, the workspace paths stored before paths were
// stored real: those under the workspace root as configured, through the operator's
// symlinks. File commands then meet no symlink in any agent's path, never re-resolve one.
func (s *workspaceDirs) resolveWorkspaces(ctx context.Context) error {
	return s.st.Tx(ctx, func(tx *store.Tx) error {
		agents, err := tx.Agents()
		if err != nil {
			return err
		}
		for _, a := range agents {
			if ws := s.realWorkspace(a.Workspace); ws != a.Workspace {
				if err := tx.SetWorkspace(a.ID, ws); err != nil {
					return err
				}
				s.log.Info("agent: workspace path resolved", "agent", a.ID, "from", a.Workspace, "to", ws)
			}
		}
		return nil
	})
}

// realWorkspace maps a workspace path under the workspace root as configured to its real
// path. Only the root's own prefix is resolved: a link below it stays refused.
func (s *workspaceDirs) realWorkspace(ws string) string {
	given, real := s.workspaceRoots()
	if ws == "" || given == real {
		return ws
	}
	if ws == given || strings.HasPrefix(ws, given+"/") {
		return real + ws[len(given):]
	}
	return ws
}

// helpersFolder is the folder of a workspace that holds its helpers' workspaces.
const helpersFolder = commands.HelpersFolder

// makeWorkspace creates the workspace ws of a top-level agent, as a new folder in the
// workspace root.
func makeWorkspace(ws string) error {
	root, err := commands.OpenWorkspace(filepath.Dir(ws))
	if err != nil {
		return fmt.Errorf("creating workspace: %w", err)
	}
	defer root.Close()
	if err := root.Mkdir(filepath.Base(ws), 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("creating workspace: %w", err)
	}
	return checkFolder(root, filepath.Base(ws), filepath.Base(ws))
}

// makeHelperWorkspace creates (or finds) agents/key in the workspace parentWS through
// the parent's Root, refusing either name if it is a symlink or not a folder. It returns
// the helper's workspace and whether it made it. Errors are phrased for the parent model.
func makeHelperWorkspace(parentWS, key string) (ws string, made bool, err error) {
	root, err := commands.OpenWorkspace(parentWS)
	if err != nil {
		return "", false, err
	}
	defer root.Close()
	if err := root.Mkdir(helpersFolder, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return "", false, fmt.Errorf("cannot make the folder %s in your workspace: %w", helpersFolder, err)
	}
	if err := checkFolder(root, helpersFolder, helpersFolder); err != nil {
		return "", false, err
	}
	rel := helpersFolder + "/" + key
	err = root.Mkdir(rel, 0o700)
	made = err == nil
	if err != nil && !errors.Is(err, fs.ErrExist) {
		return "", false, fmt.Errorf("cannot make the folder %s in your workspace: %w", rel, err)
	}
	if err := checkFolder(root, rel, rel); err != nil {
		if made {
			root.Remove(rel)
		}
		return "", false, err
	}
	return filepath.Join(parentWS, helpersFolder, key), made, nil
}

// checkFolder refuses rel unless it is a folder itself, not a symlink to one: a helper
// reached through a link would work wherever the link leads.
func checkFolder(root *os.Root, rel, shown string) error {
	fi, err := root.Lstat(rel)
	switch {
	case err != nil:
		return fmt.Errorf("cannot check the folder %s in your workspace: %w", shown, err)
	case fi.Mode()&fs.ModeSymlink != 0:
		return fmt.Errorf("%s is a symlink in your workspace; remove it (rm %s) and try again", shown, shown)
	case !fi.IsDir():
		return fmt.Errorf("%s is not a folder in your workspace; remove or rename it (mv %s %s.old) and try again", shown, shown, shown)
	}
	return nil
}

// removeWorkspace removes the workspace ws recursively through the folder above it, which
// must be reached through no symlink: if ws itself is a link, the link goes, never what it
// leads to; if a folder above it is one, nothing is removed.
func removeWorkspace(ws string) error {
	if ws == "" || filepath.Dir(ws) == ws {
		return nil
	}
	root, err := commands.OpenWorkspace(filepath.Dir(ws))
	if err != nil {
		if errors.Is(err, commands.ErrWorkspaceLink) {
			return err
		}
		return nil // the folder above is gone: so is ws
	}
	defer root.Close()
	return root.RemoveAll(filepath.Base(ws))
}
