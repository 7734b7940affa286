package checkpoint

import (
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentd/agentd/internal/testutil"
)

// TestRewindCorpusRestoresEveryEarlierStepByteForByte plays seeded sequences of
// workspace changes — writes, appends, same-size rewrites, deletes, renames, mode and
// time changes, symlinks inside and out, hard links, fifos, nested and empty folders,
// files replaced by folders and back, names with newlines and bytes that are not UTF-8
// — with a checkpoint before each step, then rewinds to every earlier step in a random
// order and compares the tree with what it was, byte for byte. It runs as a user other
// than root, as the daemon does, so folders and files locked by their mode (000, 0200,
// 0500) are captured, restored and removed on the path production takes.
func TestRewindCorpusRestoresEveryEarlierStepByteForByte(t *testing.T) {
	if testutil.AsUnprivileged(t) {
		return
	}
	seeds := 100
	if testing.Short() {
		seeds = 20
	}
	outside := t.TempDir()
	writeFiles(t, outside, map[string]string{"secret": "outside the workspace"})
	wantOutside := listing(t, outside)
	restores := 0
	for seed := range seeds {
		t.Run(fmt.Sprintf("seed_%03d", seed), func(t *testing.T) {
			restores += rewindSequence(t, uint64(seed), outside)
		})
	}
	sameListing(t, "the folder outside the workspace", listing(t, outside), wantOutside)
	t.Logf("%d sequences, %d rewinds, 0 differences", seeds, restores)
}

// rewindSequence plays one sequence and returns how many rewinds it checked.
func rewindSequence(t *testing.T, seed uint64, outside string) int {
	rng := rand.New(rand.NewPCG(seed, 32))
	ws := lockableTempDir(t)
	s := openStore(t, Options{})
	g := &generator{rng: rng, ws: ws, outside: outside}
	var ids []ID
	var want []string
	steps := 6 + rng.IntN(6)
	for i := 0; i <= steps; i++ {
		before := listing(t, ws)
		c := mustCheckpoint(t, s, ws)
		ids, want = append(ids, c.ID), append(want, before)
		if i < steps {
			for range 1 + rng.IntN(3) {
				g.step(t)
			}
		}
	}
	n := 0
	for _, k := range rng.Perm(len(ids)) {
		r, err := s.Restore(ctx, ws, ids[k])
		if err != nil {
			t.Fatalf("restore to step %d: %v", k, err)
		}
		if len(r.Notices) != 0 {
			t.Fatalf("restore to step %d left things out: %+v", k, r.Notices)
		}
		sameListing(t, fmt.Sprintf("seed %d, rewound to step %d (ops: %s)", seed, k, strings.Join(g.log, "; ")), listing(t, ws), want[k])
		n++
	}
	verifyStore(t, s)
	return n
}

// generator makes random changes to a workspace, the kinds an agent's commands make.
type generator struct {
	rng     *rand.Rand
	ws      string
	outside string
	log     []string
}

var corpusNames = []string{"a", "b.txt", "notes", "sub", "x y", "ünï", "new\nline", "\xff\xfe", "z.bin"}

func (g *generator) name() string { return corpusNames[g.rng.IntN(len(corpusNames))] }

// entries lists the workspace's files and folders (the root folder is "").
func (g *generator) entries(t *testing.T) (files, dirs []string) {
	dirs = []string{""}
	filepath.WalkDir(g.ws, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == g.ws {
			return nil
		}
		rel, _ := filepath.Rel(g.ws, p)
		switch {
		case d.Type().IsRegular():
			files = append(files, rel)
		case d.IsDir():
			dirs = append(dirs, rel)
		}
		return nil
	})
	return files, dirs
}

func (g *generator) pick(list []string) string {
	if len(list) == 0 {
		return ""
	}
	return list[g.rng.IntN(len(list))]
}

func (g *generator) content() []byte {
	if g.rng.IntN(4) == 0 {
		b := make([]byte, g.rng.IntN(3000))
		for i := range b {
			b[i] = byte(g.rng.Uint32())
		}
		return b
	}
	var sb strings.Builder
	for range g.rng.IntN(20) {
		fmt.Fprintf(&sb, "line %d of %d\n", g.rng.IntN(5), g.rng.IntN(1000))
	}
	return []byte(sb.String())
}

// step makes one change; a change the tree does not allow (a rename over a full
// folder) just does nothing, as it would for a shell command.
func (g *generator) step(t *testing.T) {
	files, dirs := g.entries(t)
	sp := spot{file: g.pick(files), dir: g.pick(dirs), any: g.pick(append(files, dirs[1:]...))}
	sp.fresh = filepath.Join(sp.dir, g.name())
	if len(dirs) > 1 {
		sp.folder = g.pick(dirs[1:])
	}
	if g.throughLink(sp.fresh) {
		return // the sandbox keeps a command's writes in the workspace; this generator has no sandbox
	}
	if op := corpusOps[g.rng.IntN(len(corpusOps))](g, sp); op != "" {
		g.log = append(g.log, op)
	}
}

// spot is where a change may happen: an existing file, folder ("" is the root), folder
// other than the root, file or folder, and a new name in dir ("" where there is none).
type spot struct{ file, dir, folder, any, fresh string }

func (g *generator) at(p string) string { return filepath.Join(g.ws, p) }

// corpusOps are the changes step picks from, each returning what it did ("" for nothing).
var corpusOps = []func(g *generator, sp spot) string{
	func(g *generator, sp spot) string {
		writeNoBlock(g.at(sp.fresh), g.content(), 0o644)
		return "write " + sp.fresh
	},
	func(g *generator, sp spot) string {
		if sp.file == "" {
			return ""
		}
		if f, err := os.OpenFile(g.at(sp.file), os.O_APPEND|os.O_WRONLY, 0); err == nil {
			f.Write(g.content())
			f.Close()
		}
		return "append " + sp.file
	},
	func(g *generator, sp spot) string { // same size, the old mtime put back: only ctime tells
		fi, err := os.Stat(g.at(sp.file))
		if sp.file == "" || err != nil {
			return ""
		}
		b, _ := os.ReadFile(g.at(sp.file))
		for i := range b {
			b[i] ^= 0x20
		}
		writeNoBlock(g.at(sp.file), b, 0)
		os.Chtimes(g.at(sp.file), fi.ModTime(), fi.ModTime())
		return "rewrite in place " + sp.file
	},
	func(g *generator, sp spot) string {
		if sp.any == "" {
			return ""
		}
		os.RemoveAll(g.at(sp.any))
		return "delete " + sp.any
	},
	func(g *generator, sp spot) string {
		if sp.any == "" {
			return ""
		}
		os.Rename(g.at(sp.any), g.at(sp.fresh))
		return "rename " + sp.any + " to " + sp.fresh
	},
	func(g *generator, sp spot) string {
		if sp.any == "" {
			return ""
		}
		modes := []os.FileMode{0o644, 0o600, 0o755, 0o400, 0o444, 0o700, 0o750, 0o555, 0o1777, 0o000, 0o200, 0o500}
		m := modes[g.rng.IntN(len(modes))]
		os.Chmod(g.at(sp.any), m)
		return fmt.Sprintf("chmod %o %s", m, sp.any)
	},
	func(g *generator, sp spot) string {
		targets := []string{"a", "../b.txt", "sub/notes", "nowhere", g.outside, g.outside + "/secret", "../../../../etc/passwd", "."}
		target := targets[g.rng.IntN(len(targets))]
		os.Symlink(target, g.at(sp.fresh))
		return "symlink " + sp.fresh + " -> " + target
	},
	func(g *generator, sp spot) string {
		if sp.file == "" {
			return ""
		}
		os.Link(g.at(sp.file), g.at(sp.fresh))
		return "hard link " + sp.file + " as " + sp.fresh
	},
	func(g *generator, sp spot) string {
		p := filepath.Join(sp.dir, g.name(), g.name())
		if g.throughLink(p) {
			return ""
		}
		os.MkdirAll(g.at(p), 0o755)
		if g.rng.IntN(2) == 0 {
			writeNoBlock(g.at(filepath.Join(p, g.name())), g.content(), 0o644)
		}
		return "mkdir -p " + p
	},
	func(g *generator, sp spot) string {
		os.Mkdir(g.at(sp.fresh), 0o700)
		return "mkdir " + sp.fresh
	},
	func(g *generator, sp spot) string {
		if sp.file == "" {
			return ""
		}
		os.Remove(g.at(sp.file))
		os.Mkdir(g.at(sp.file), 0o755)
		writeNoBlock(g.at(filepath.Join(sp.file, g.name())), g.content(), 0o644)
		return "replace file " + sp.file + " by a folder"
	},
	func(g *generator, sp spot) string {
		if sp.folder == "" {
			return ""
		}
		os.RemoveAll(g.at(sp.folder))
		writeNoBlock(g.at(sp.folder), g.content(), 0o600)
		return "replace folder " + sp.folder + " by a file"
	},
	func(g *generator, sp spot) string {
		if sp.file == "" {
			return ""
		}
		when := time.Unix(int64(g.rng.IntN(2e9)), int64(g.rng.IntN(1e9)))
		os.Chtimes(g.at(sp.file), when, when)
		return "touch " + sp.file
	},
	func(g *generator, sp spot) string {
		syscall.Mkfifo(g.at(sp.fresh), 0o640)
		return "mkfifo " + sp.fresh
	},
}

// writeNoBlock is os.WriteFile that fails on a fifo instead of waiting for a reader.
func writeNoBlock(p string, b []byte, mode os.FileMode) {
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_TRUNC|syscall.O_NONBLOCK, mode)
	if err != nil {
		return
	}
	f.Write(b)
	f.Close()
}

// throughLink reports whether the workspace path p is a symlink or goes through one.
func (g *generator) throughLink(p string) bool {
	for cur := p; cur != "." && cur != "/" && cur != ""; cur = filepath.Dir(cur) {
		if fi, err := os.Lstat(filepath.Join(g.ws, cur)); err == nil && fi.Mode()&fs.ModeSymlink != 0 {
			return true
		}
	}
	return false
}
