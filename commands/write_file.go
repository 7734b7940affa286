package commands

import (
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/agentd/agentd/api"
	"github.com/agentd/agentd/internal/randid"
)

// writeFile creates or replaces a text file in the workspace, atomically: a reader sees the
// old contents or the new ones, never a mix, even if the daemon dies mid-write. The rename
// replaces the name, so a file with other hard links is never written through: its other
// names keep the old contents.
type writeFile struct{}

type writeFileArgs struct {
	Path     string `json:"path" desc:"file path" max:"256"`
	Contents string `json:"contents" desc:"the whole new text" max:"2000"`
}

var writeFileSpec = Spec{
	Name:        "write_file",
	Description: "Create or replace a text file in the workspace",
	Params:      FromStruct(writeFileArgs{}),
	Subject:     "path",
	Class:       ClassWriteWorkspace,
	Idempotent:  true, // writing the same contents twice leaves the same file
}

func init() { Register(writeFile{}) }

func (writeFile) Spec() Spec { return writeFileSpec }

func (writeFile) Execute(ctx context.Context, env Env, raw json.RawMessage) (string, error) {
	var a writeFileArgs
	if err := DecodeArgs("write_file", raw, &a); err != nil {
		return "", err
	}
	root, _, rel, err := openIn(env.Workspace, a.Path)
	if err != nil {
		return "", err
	}
	defer root.Close()
	if rel == "." {
		return "", badPath(a.Path, "is the workspace folder itself; give a file name")
	}
	if err := refuseGitWrite(root, a.Path, filepath.Clean(a.Path), rel); err != nil {
		return "", err
	}
	perm := fs.FileMode(0o644)
	if fi, err := root.Lstat(rel); err == nil {
		if fi.IsDir() {
			return "", badPath(a.Path, "is a folder; give a file name")
		}
		if fi.Mode().IsRegular() {
			perm = fi.Mode().Perm()
		}
	}
	if err := writeAtomic(ctx, root, rel, []byte(a.Contents), perm); err != nil {
		return "", fsError(env.Workspace, a.Path, err)
	}
	return fmt.Sprintf("wrote %d bytes to %s", len(a.Contents), filepath.Clean(a.Path)), nil
}

// writeAtomic writes data to a temporary file beside rel and renames it over rel.
// Every step goes through root, so neither the temp file nor the rename can leave it.
func writeAtomic(ctx context.Context, root *os.Root, rel string, data []byte, perm fs.FileMode) (err error) {
	dir := filepath.Dir(rel)
	if dir != "." {
		if err := root.MkdirAll(dir, 0o755); err != nil {
			return err
		}
	}
	// Short and hidden: a name near NAME_MAX plus a suffix would be too long.
	tmp := filepath.Join(dir, ".write-"+randid.Hex(8)+".tmp")
	f, err := root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			f.Close()
			root.Remove(tmp)
		}
	}()
	if _, err = f.Write(data); err != nil {
		return err
	}
	if err = f.Chmod(perm); err != nil { // the umask narrowed the create mode
		return err
	}
	if err = f.Sync(); err != nil {
		return err
	}
	if err = ctx.Err(); err != nil { // timed out: leave the old file as it was
		return err
	}
	if err = f.Close(); err != nil {
		return err
	}
	if err = root.Rename(tmp, rel); err != nil {
		return err
	}
	// Make the rename itself durable; a failure here loses nothing already written.
	if d, derr := root.Open(dir); derr == nil {
		d.Sync()
		d.Close()
	}
	return nil
}

// Preview implements Previewer: the diff of the file against the new contents.
func (writeFile) Preview(_ context.Context, env Env, raw json.RawMessage) *api.Preview {
	var a writeFileArgs
	if json.Unmarshal(raw, &a) != nil || a.Path == "" {
		return nil
	}
	return filePreview(env, a.Path, false, func(string, bool) string { return a.Contents })
}
