// Package bind binds the workspace files a command line runs to their contents, so an
// exact grant (y!) of a script asks again once the script is rewritten: what a person
// approved is what runs. The policy (daemon/agent/policy) asks it when it weighs a y!,
// and the loop notes on a proposal why a y! did not approve it.
package bind

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"slices"
	"strings"
	"syscall"

	"github.com/agentd/agentd/api"
	"github.com/agentd/agentd/commands"
	"github.com/agentd/agentd/commands/permission"
	"github.com/agentd/agentd/daemon/agent/cycle"
	"github.com/agentd/agentd/daemon/store"
)

// An exact grant (y!) of a command that runs files binds the workspace files its line
// names, with their contents: a script rewritten since asks again. What the line names
// is read by the rules' one shell parser; each name is resolved by the workspace's one
// resolver. Binding is bounded: past these bounds y! is refused (approve once instead).
const (
	maxBoundFiles = 16       // files one grant binds
	MaxBoundBytes = 16 << 20 // bytes hashed for one grant
	maxBindNames  = 512      // names looked up in the workspace for one line
	maxBindDirs   = 8        // folders a line's cd commands may leave it in
)

// RunsFiles reports whether command runs files its args name: its exact grants bind them.
func RunsFiles(command string) bool {
	return command == "execute_shell" || command == "execute_python_file"
}

// Files is what an exact grant of p binds in workspace ws, as the files are now: the
// regular workspace files p's line names and the sha256 of each.
func Files(ws string, p *api.Proposal) *cycle.Binding {
	wsAbs, err := commands.WorkspaceDir(ws)
	if err != nil {
		return &cycle.Binding{Problem: err.Error()}
	}
	names, problem := fileNames(wsAbs, p)
	if problem == "" && len(names) > 0 {
		var files []api.BoundFile
		if files, problem = hashFiles(ws, names); problem == "" {
			return &cycle.Binding{Files: files}
		}
	}
	return &cycle.Binding{Problem: problem}
}

// fileNames are the workspace paths p's line names, from the workspace's top: for
// execute_python_file its path and args; for execute_shell every word of every simple
// command and each file an input redirection reads, an option's value (--file=build.mk)
// too, from every folder its cd commands may leave it in. A name that leads outside the
// workspace is left out; a word whose file cannot be known for sure is a problem.
func fileNames(wsAbs string, p *api.Proposal) (names []string, problem string) {
	var cmds [][]string
	shell := p.Command == "execute_shell"
	switch p.Command {
	case "execute_python_file":
		var a struct {
			Path string   `json:"path"`
			Args []string `json:"args"`
		}
		if json.Unmarshal(p.Args, &a) != nil {
			return nil, "its args cannot be read"
		}
		cmds = [][]string{append([]string{a.Path}, a.Args...)}
	case "execute_shell":
		var a struct {
			Line string `json:"command_line"`
		}
		if json.Unmarshal(p.Args, &a) != nil {
			return nil, "its args cannot be read"
		}
		if cmds, problem = permission.ShellFileWords(a.Line); problem != "" {
			return nil, "it is not plain commands: " + problem
		}
	}
	dirs := []string{wsAbs} // where the line may be when it reads a word
	seen := map[string]bool{}
	for _, c := range cmds {
		if shell {
			if next, isCd, problem := cdDirs(dirs, c); problem != "" {
				return nil, problem
			} else if isCd {
				dirs = next
				continue // cd names a folder, not a file
			}
		}
		for _, w := range c {
			for _, w := range optionValue(w) {
				for _, d := range dirs {
					name, problem := nameIn(wsAbs, d, w)
					if problem != "" {
						return nil, problem
					}
					if name == "" || seen[name] {
						continue
					}
					if len(names) == maxBindNames {
						return nil, fmt.Sprintf("it has more than %d words that may name workspace files", maxBindNames)
					}
					seen[name] = true
					names = append(names, name)
				}
			}
		}
	}
	return names, ""
}

// optionValue is the word and, for an option with a value (--file=build.mk), the value.
func optionValue(w string) []string {
	if strings.HasPrefix(w, "-") {
		if _, v, ok := strings.Cut(w, "="); ok {
			return []string{w, v}
		}
	}
	return []string{w}
}

// cdDirs reports whether c changes the shell's folder (cd DIR, also through command or
// builtin), and then the folders the line may be in after it: those before (a cd that
// fails, or one in a pipeline, changes nothing) and each with DIR applied, as the shell
// applies it (lexically). A folder change that cannot be followed is a problem.
func cdDirs(dirs []string, c []string) (next []string, isCd bool, problem string) {
	w := c
	for len(w) > 1 && (w[0] == "command" || w[0] == "builtin") {
		for w = w[1:]; len(w) > 1 && strings.HasPrefix(w[0], "-"); w = w[1:] {
		}
	}
	switch w[0] {
	case "cd":
	case "pushd", "popd":
		return nil, true, "it changes folder with " + w[0] + ", so where its words lead is not known"
	default:
		return nil, false, ""
	}
	args := slices.DeleteFunc(slices.Clone(w[1:]), func(a string) bool { return a == "-L" || a == "--" })
	to := "~"
	switch {
	case len(args) == 1 && args[0] != "-" && !strings.HasPrefix(args[0], "-"):
		to = args[0]
	case len(args) > 0:
		return nil, true, "it changes folder with cd " + strings.Join(args, " ") + ", so where its words lead is not known"
	}
	next = slices.Clone(dirs)
	for _, d := range dirs {
		nd := path.Join(d, fromHome(to)) // an absolute DIR replaces d
		if !slices.Contains(next, nd) {
			next = append(next, nd)
		}
	}
	if len(next) > maxBindDirs {
		return nil, true, fmt.Sprintf("its cd commands may leave it in more than %d folders", maxBindDirs)
	}
	return next, true, ""
}

// runHome stands for a run's HOME: an empty folder of its own, never in the workspace.
const runHome = "/home/sandbox"

// fromHome is w with a leading ~ (the home folder) spelled out.
func fromHome(w string) string {
	if w == "~" || strings.HasPrefix(w, "~/") {
		return runHome + w[1:]
	}
	return w
}

// nameIn is the workspace path (from its top) word w names when read in folder dir, ""
// when it names nothing in the workspace (~/x is in the run's own HOME, not there).
func nameIn(wsAbs, dir, w string) (name, problem string) {
	if w == "" || strings.IndexByte(w, 0) >= 0 {
		return "", ""
	}
	w = fromHome(w)
	if w == "/proc" || strings.HasPrefix(w, "/proc/") {
		return "", w + " reaches files through /proc, so which file it names is not known"
	}
	for part := range strings.SplitSeq(w, "/") {
		if part == ".." {
			// The kernel goes up from where a link led, the resolver from the name before it.
			return "", w + " goes up a folder (..), so which file it names is not known for sure"
		}
	}
	abs := path.Join(dir, w)
	if path.IsAbs(w) {
		abs = path.Clean(w)
	}
	switch {
	case abs == wsAbs:
		return "", ""
	case strings.HasPrefix(abs, wsAbs+"/"):
		return abs[len(wsAbs)+1:], ""
	}
	return "", ""
}

// hashFiles hashes the regular files among names in workspace ws, each resolved through
// the workspace's links as the file commands resolve them; a name that leads outside the
// workspace, or to nothing or a folder, is left out.
func hashFiles(ws string, names []string) (files []api.BoundFile, problem string) {
	root, err := commands.OpenWorkspace(ws)
	if err != nil {
		return nil, err.Error()
	}
	defer root.Close()
	left := int64(MaxBoundBytes)
	for _, name := range names {
		real, err := commands.ResolveLinks(ws, name)
		if errors.Is(err, commands.ErrBadPath) {
			continue // a link out of the workspace, or nowhere: no workspace file
		} else if err != nil {
			return nil, fmt.Sprintf("%s cannot be checked: %v", name, err)
		}
		sum, n, problem := hashFile(root, real, left)
		switch {
		case problem != "":
			return nil, name + problem
		case sum == "":
			continue
		case len(files) == maxBoundFiles:
			return nil, fmt.Sprintf("it names more than %d workspace files", maxBoundFiles)
		}
		left -= n
		files = append(files, api.BoundFile{Path: name, SHA256: sum})
	}
	slices.SortFunc(files, func(a, b api.BoundFile) int { return strings.Compare(a.Path, b.Path) })
	return files, ""
}

// hashFile is the sha256 of the regular file at rel in root and its size, reading at
// most left bytes; "" when there is no file or a folder there. problem, when set,
// follows the file's name.
func hashFile(root *os.Root, rel string, left int64) (sum string, n int64, problem string) {
	f, err := root.OpenFile(rel, os.O_RDONLY|syscall.O_NONBLOCK, 0) // a FIFO must not hang it
	if errors.Is(err, fs.ErrNotExist) {
		return "", 0, ""
	} else if err != nil {
		return "", 0, " cannot be read: " + err.Error()
	}
	defer f.Close()
	fi, err := f.Stat()
	switch {
	case err != nil:
		return "", 0, " cannot be read: " + err.Error()
	case fi.IsDir():
		return "", 0, ""
	case !fi.Mode().IsRegular():
		return "", 0, " is not a regular file, so what it holds is not known"
	case fi.Size() > left:
		return "", 0, fmt.Sprintf(": the files the line names hold more than %d MiB", MaxBoundBytes>>20)
	}
	h := sha256.New()
	if n, err = io.Copy(h, io.LimitReader(f, left+1)); err != nil {
		return "", 0, " cannot be read: " + err.Error()
	} else if n > left {
		return "", 0, fmt.Sprintf(": the files the line names hold more than %d MiB", MaxBoundBytes>>20)
	}
	return hex.EncodeToString(h.Sum(nil)), n, ""
}

// NoteUnbound tells the person asked about p why a y! of its command and args did not
// approve it (why): in p's preview, which every front end shows with the proposal.
func NoteUnbound(tx *store.Tx, p *api.Proposal, why string) error {
	return tx.NoteProposal(p, "asks again: "+why)
}
