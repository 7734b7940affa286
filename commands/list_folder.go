package commands

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"sort"
	"strings"
	"syscall"

	"github.com/agentd/agentd/internal/display"
)

const (
	maxListed = 200    // entries shown to the model
	maxSorted = 10_000 // entries read and sorted; the rest are only counted
)

type listFolderArgs struct {
	Path string `json:"path" desc:"folder; . for the top" max:"256"`
}

var listFolderSpec = Spec{
	Name:        "list_folder",
	Description: "List a folder of the workspace",
	Params:      FromStruct(listFolderArgs{}),
	Subject:     "path",
	Class:       ClassRead,
	Idempotent:  true,
}

func init() { Register(&funcCommand[listFolderArgs]{listFolderSpec, listFolder}) }

// listFolder lists one folder of the workspace, sorted, folders marked with a trailing /.
func listFolder(ctx context.Context, env Env, a listFolderArgs) (string, error) {
	root, ws, rel, err := openIn(env.Workspace, a.Path)
	if err != nil {
		return "", err
	}
	defer root.Close()
	// O_NONBLOCK: a FIFO swapped in since the check must fail, not hang the open.
	f, err := root.OpenFile(rel, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return "", fsError(env.Workspace, a.Path, err)
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil {
		return "", fsError(env.Workspace, a.Path, err)
	} else if !fi.IsDir() {
		return "", badPath(a.Path, "is a file, not a folder; use read_file to read it")
	}
	var names []string
	total := 0
	for ctx.Err() == nil {
		batch, err := f.ReadDir(256)
		for _, e := range batch {
			total++
			if len(names) < maxSorted {
				// One name per line, whatever bytes it holds: escapes, not raw controls.
				names = append(names, display.Escape(entryName(root, ws, rel, e), display.Line))
			}
		}
		if errors.Is(err, io.EOF) || (err == nil && len(batch) == 0) {
			break
		}
		if err != nil {
			return "", fsError(env.Workspace, a.Path, err)
		}
	}
	if err := ctx.Err(); err != nil {
		return "", err
	}
	if total == 0 {
		return "(empty folder)", nil
	}
	sort.Strings(names)
	if len(names) > maxListed {
		names = names[:maxListed]
	}
	out := strings.Join(names, "\n")
	if total > len(names) {
		out += fmt.Sprintf("\n[showing %d of %d entries]", len(names), total)
	}
	return out, nil
}

// entryName is how e, in the folder dir (resolved, relative to root), appears in a
// listing: folders, and links to folders inside the workspace, end in /.
func entryName(root *os.Root, ws, dir string, e fs.DirEntry) string {
	name := e.Name()
	switch {
	case e.IsDir():
		return name + "/"
	case e.Type()&fs.ModeSymlink != 0:
		p := path.Join(dir, name)
		to, err := resolveIn(root, ws, p, p)
		if err != nil {
			return name + " (unusable link)"
		}
		if fi, err := root.Lstat(to); err == nil && fi.IsDir() {
			return name + "/"
		}
	}
	return name
}
