package team

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/agentd/agentd/api"
	"github.com/agentd/agentd/commands"
)

// Workflow files named from chat (/agent team FILE TASK). Chat has no file to upload, so
// FILE names one on the daemon's machine, and only in the configured directory ([teams]
// dir): a bare name (NAME.toml there) or that file's absolute path. A chat message is
// untrusted text, so `..` anywhere is refused rather than cleaned away, and the file is
// opened through the one path resolver the file commands use (commands.OpenRead),
// confined to the directory: a link or hard link out of it is refused too.

// maxWorkflowFile is the largest workflow file read, as StartTeam takes.
const maxWorkflowFile = 256 << 10

// ResolveWorkflow returns the file a chat's FILE names, relative to dir: NAME.toml for a
// bare name, or the absolute path of a file in dir. Errors name dir and what to give.
func ResolveWorkflow(dir, name string) (string, error) {
	name = strings.TrimSpace(name)
	if name == "" {
		return "", badRequest("no workflow named: give a workflow name from the teams directory")
	}
	if dir == "" {
		return "", badRequest("workflow %q: chat starts only workflows in the teams directory, and none is configured: set [teams] dir in agentd's config and put the file there (agentctl team run FILE TASK starts any file)", name)
	}
	if strings.ContainsRune(name, 0) || slices.Contains(strings.FieldsFunc(name, func(r rune) bool { return r == '/' || r == '\\' }), "..") {
		return "", badRequest("workflow %q: a name with \"..\" is refused; give a name from the teams directory %s", name, dir)
	}
	if filepath.IsAbs(name) {
		rel, err := filepath.Rel(filepath.Clean(dir), filepath.Clean(name))
		if err != nil || rel == "." || strings.HasPrefix(rel, "..") || strings.ContainsAny(rel, `/\`) {
			return "", badRequest("workflow file %s is not in the teams directory %s: chat starts only workflows there; copy the file there and give its name (agentctl team run FILE TASK starts any file)", name, dir)
		}
		return rel, nil
	}
	if strings.ContainsAny(name, `/\`) {
		return "", badRequest("workflow %q: give a bare name from the teams directory %s (like software_company)", name, dir)
	}
	if !strings.HasSuffix(name, ".toml") {
		name += ".toml"
	}
	return name, nil
}

// ReadWorkflow reads the workflow file a chat's FILE names (ResolveWorkflow) inside dir,
// and returns its absolute path and contents.
func ReadWorkflow(dir, name string) (path string, src []byte, err error) {
	rel, err := ResolveWorkflow(dir, name)
	if err != nil {
		return "", nil, err
	}
	path = filepath.Join(dir, rel)
	// The directory is the operator's, links and all; beneath it, nothing leads out.
	root, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return "", nil, fmt.Errorf("teams directory %s: %w", dir, err)
	}
	f, err := commands.OpenRead(root, rel)
	switch {
	case err != nil && errors.Is(err, fs.ErrNotExist):
		return "", nil, api.Errorf(api.ErrNotFound, "no workflow %q in the teams directory %s: `/agent team` lists them", strings.TrimSuffix(rel, ".toml"), dir)
	case err != nil && errors.Is(err, commands.ErrBadPath):
		return "", nil, badRequest("workflow file %s is refused: chat starts only files inside the teams directory %s, and this one is not (%v)", path, dir, err)
	case err != nil:
		return "", nil, fmt.Errorf("workflow file %s: %w", path, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	switch {
	case err != nil:
		return "", nil, fmt.Errorf("workflow file %s: %w", path, err)
	case !fi.Mode().IsRegular():
		return "", nil, badRequest("workflow file %s is not a regular file", path)
	case fi.Size() > maxWorkflowFile:
		return "", nil, badRequest("workflow file %s is %d bytes: at most 256 KiB", path, fi.Size())
	}
	if src, err = io.ReadAll(io.LimitReader(f, maxWorkflowFile+1)); err != nil {
		return "", nil, fmt.Errorf("workflow file %s: %w", path, err)
	}
	if len(src) > maxWorkflowFile {
		return "", nil, badRequest("workflow file %s is over 256 KiB", path)
	}
	return path, src, nil
}

// Workflows lists the workflow names (files NAME.toml) in dir, sorted.
func Workflows(dir string) ([]string, error) {
	if dir == "" {
		return nil, nil
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("teams directory: %w", err)
	}
	var out []string
	for _, e := range ents {
		if n, ok := strings.CutSuffix(e.Name(), ".toml"); ok && !e.IsDir() && n != "" {
			out = append(out, n)
		}
	}
	return out, nil
}

// Shelf starts team runs from workflow files named in chat: the engine, and the
// configured directory of workflows.
type Shelf struct {
	*Engine
	Dir string
}

// StartTeamFile starts a run of the workflow file FILE names in the directory
// (ResolveWorkflow) for task.
func (l Shelf) StartTeamFile(ctx context.Context, file, task, by string) (*api.TeamRun, error) {
	path, src, err := ReadWorkflow(l.Dir, file)
	if err != nil {
		return nil, err
	}
	return l.StartTeam(ctx, api.TeamRunRequest{Workflow: string(src), File: path, Task: task, By: by})
}

// Workflows lists the workflows in the directory.
func (l Shelf) Workflows(context.Context) ([]string, error) { return Workflows(l.Dir) }
