package commands

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"slices"
	"strings"
	"syscall"
	"unicode/utf8"

	"github.com/agentd/agentd/internal/display"
)

// Budgets of one search; each one reached is named in the result so the model can narrow it.
const (
	maxSearchVisited    = 20_000   // paths looked at
	maxSearchFiles      = 1_000    // files read for text
	maxSearchMatches    = 100      // paths or lines listed
	maxSearchFileBytes  = 1 << 20  // read per file
	maxSearchTotalBytes = 32 << 20 // read per search
	maxSnippetBytes     = 160      // of one matching line
)

type searchFilesArgs struct {
	Pattern string `json:"pattern" desc:"glob like notes/**/*.md" max:"256"`
	Text    string `json:"text,omitempty" desc:"optional text to grep for" max:"200"`
}

var searchFilesSpec = Spec{
	Name:        "search_files",
	Description: "Find files by glob",
	Params:      FromStruct(searchFilesArgs{}),
	Subject:     "pattern",
	Class:       ClassRead,
	Idempotent:  true,
}

func init() { Register(&funcCommand[searchFilesArgs]{searchFilesSpec, searchFiles}) }

// searchFiles finds workspace paths by glob and, given text, the lines of those files that
// contain it. It walks through an os.Root and never follows a symlink, so it cannot leave
// the workspace however the tree is built.
func searchFiles(ctx context.Context, env Env, a searchFilesArgs) (string, error) {
	if strings.ContainsAny(a.Text, "\r\n") {
		return "", errors.New("search_files: text must be on one line; lines are searched one at a time")
	}
	g, err := parseGlob(a.Pattern)
	if err != nil {
		return "", err
	}
	// The literal start is checked like any path, so a pattern naming a link out is refused
	// with the same words as read_file would use.
	root, _, start, err := openIn(env.Workspace, g.prefix)
	if err != nil {
		if len(g.rest) == 0 {
			return "", asPatternError(err)
		}
		return "", fmt.Errorf("pattern %s: %w", shortQuote(a.Pattern), err)
	}
	defer root.Close()
	if fi, err := root.Stat(start); err == nil && !fi.IsDir() && len(g.rest) > 0 {
		return "", fmt.Errorf("pattern %s: %w", shortQuote(a.Pattern),
			badPath(g.prefix, "is a file, not a folder"))
	}
	s := &search{ctx: ctx, root: root, glob: g, start: start, needle: strings.ToLower(a.Text)}
	if err := fs.WalkDir(root.FS(), start, s.visit); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return fmt.Sprintf("no files match %s", shortQuote(a.Pattern)), nil
		}
		if ctx.Err() != nil {
			return "", ctx.Err()
		}
		return "", fsError(env.Workspace, g.prefix, err)
	}
	return s.report(a), nil
}

// glob is a pattern split where its first wildcard is: the literal start is resolved like
// any path, the rest is matched segment by segment below it.
type glob struct {
	prefix string   // leading segments without wildcards, cleaned; "." for none
	rest   []string // the segments from the first wildcard on; "**" is any number of segments
}

func parseGlob(p string) (glob, error) {
	if p == "" {
		return glob{}, &patternError{&pathError{path: p, problem: `is empty; use "**" to match every file`, err: ErrBadPath}}
	}
	clean, err := CleanPath(p)
	if err != nil {
		return glob{}, asPatternError(err)
	}
	segs := strings.Split(clean, "/")
	i := 0
	for i < len(segs) && !strings.ContainsAny(segs[i], `*?[\`) {
		i++
	}
	g := glob{prefix: path.Join(append([]string{"."}, segs[:i]...)...)}
	for _, seg := range segs[i:] {
		if seg == "**" && len(g.rest) > 0 && g.rest[len(g.rest)-1] == "**" {
			continue // a/**/**/b is a/**/b; fewer states to track
		}
		if _, err := path.Match(seg, ""); err != nil {
			return glob{}, &patternError{&pathError{path: p, problem: fmt.Sprintf("has a malformed part %q: check its [ ] and \\", seg), err: ErrBadPath}}
		}
		g.rest = append(g.rest, seg)
	}
	return g, nil
}

// states returns where in rest a path below the start can be after its segments, as a set
// of indexes; len(rest) in it means the path matches.
func (g glob) states(sub string) []bool {
	cur := g.closure(make([]bool, len(g.rest)+1), 0)
	if sub == "." {
		return cur
	}
	for _, seg := range strings.Split(sub, "/") {
		next := make([]bool, len(g.rest)+1)
		for i, on := range cur {
			if !on || i == len(g.rest) {
				continue
			}
			switch pat := g.rest[i]; {
			case pat == "**":
				if !hidden(seg) {
					g.closure(next, i)
				}
			case matchSegment(pat, seg):
				g.closure(next, i+1)
			}
		}
		cur = next
	}
	return cur
}

// closure marks i and, since "**" may match no segment, the states after a "**" at i.
func (g glob) closure(set []bool, i int) []bool {
	for ; i <= len(g.rest); i++ {
		set[i] = true
		if i == len(g.rest) || g.rest[i] != "**" {
			break
		}
	}
	return set
}

func (g glob) matches(st []bool) bool { return st[len(g.rest)] }

// alive reports whether something below a folder in these states could still match.
func (g glob) alive(st []bool) bool { return slices.Contains(st[:len(g.rest)], true) }

// matchSegment matches one name like a shell does: wildcards skip hidden names unless the
// pattern starts with a dot too, which keeps .git and .outputs out of "**".
func matchSegment(pat, name string) bool {
	if hidden(name) && !strings.HasPrefix(pat, ".") {
		return false
	}
	ok, _ := path.Match(pat, name)
	return ok
}

func hidden(name string) bool { return strings.HasPrefix(name, ".") }

// search is the state of one search_files walk.
type search struct {
	ctx    context.Context
	root   *os.Root
	glob   glob
	start  string // where the walk starts, relative to the root, symlinks resolved
	needle string // lowered; "" lists paths only

	visited, read, textFiles, binary, partial int
	hardLinked                                int // files skipped for having other names
	bytesRead                                 int64
	out                                       []string
	cut                                       string // which budget ended the walk, if any
	literalFolder                             bool   // the pattern named a folder without a wildcard
}

// visit is the fs.WalkDirFunc: it matches p and reads it when text is searched.
func (s *search) visit(p string, d fs.DirEntry, err error) error {
	if cerr := s.ctx.Err(); cerr != nil {
		return cerr
	}
	if err != nil {
		if p == s.start {
			return err
		}
		return nil // an unreadable folder below the start: search the rest
	}
	if s.visited++; s.visited > maxSearchVisited {
		s.cut = fmt.Sprintf("stopped after looking at %d paths; narrow the pattern", maxSearchVisited)
		return fs.SkipAll
	}
	if d.Type()&fs.ModeSymlink != 0 {
		return nil // never followed: it may lead out, and a loop would never end
	}
	sub := "."
	if p != s.start {
		sub = strings.TrimPrefix(p, s.start+"/")
		if s.start == "." {
			sub = p
		}
	}
	shown := display.Escape(path.Join(s.glob.prefix, sub), display.Line) // one path per line
	st := s.glob.states(sub)
	if d.IsDir() {
		if sub == "." {
			if len(s.glob.rest) == 0 {
				s.literalFolder = true
				return fs.SkipDir
			}
			return nil
		}
		if s.glob.matches(st) && s.needle == "" {
			if err := s.add(shown + "/"); err != nil {
				return err
			}
		}
		if !s.glob.alive(st) {
			return fs.SkipDir
		}
		return nil
	}
	if !s.glob.matches(st) {
		return nil
	}
	if s.needle == "" {
		return s.add(shown)
	}
	if !d.Type().IsRegular() {
		return nil
	}
	return s.grep(p, shown)
}

// add lists one more match, or ends the walk when the list is full.
func (s *search) add(line string) error {
	if len(s.out) >= maxSearchMatches {
		s.cut = fmt.Sprintf("showing the first %d matches; narrow the pattern or the text to see others", maxSearchMatches)
		return fs.SkipAll
	}
	s.out = append(s.out, line)
	return nil
}

// grep lists the lines of the file p that contain the needle, as `path:line: snippet`.
func (s *search) grep(p, shown string) error {
	if s.read >= maxSearchFiles {
		s.cut = fmt.Sprintf("searched only the first %d matching files; narrow the pattern", maxSearchFiles)
		return fs.SkipAll
	}
	if s.bytesRead >= maxSearchTotalBytes {
		s.cut = fmt.Sprintf("stopped after reading %d MiB; narrow the pattern", maxSearchTotalBytes>>20)
		return fs.SkipAll
	}
	s.read++
	// O_NONBLOCK: a FIFO swapped in since the walk listed p must not hang the search.
	f, err := s.root.OpenFile(p, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil // gone or unreadable since it was listed: not a match
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() {
		return nil
	}
	if refuseHardLinked(p, fi) != nil {
		s.hardLinked++ // another name may be outside the workspace: never read through it
		return nil
	}
	data, err := io.ReadAll(io.LimitReader(f, maxSearchFileBytes))
	if err != nil {
		return nil
	}
	s.bytesRead += int64(len(data))
	if fi.Size() > maxSearchFileBytes {
		s.partial++
		data = trimPartialRune(data)
	}
	if bytes.IndexByte(data, 0) >= 0 || !utf8.Valid(data) {
		s.binary++
		return nil
	}
	s.textFiles++
	text := string(data)
	if !strings.Contains(strings.ToLower(text), s.needle) {
		return nil
	}
	n := 0
	for line := range strings.Lines(text) {
		n++
		low := strings.ToLower(line)
		at := strings.Index(low, s.needle)
		if at < 0 {
			continue
		}
		if len(low) != len(line) {
			at = 0 // lowering changed byte offsets: show the line from its start
		}
		if err := s.add(fmt.Sprintf("%s:%d: %s", shown, n, display.Escape(snippet(line, at), display.Text))); err != nil {
			return err
		}
	}
	return nil
}

// snippet is line, or the part of it around byte offset at, short enough for a prompt.
func snippet(line string, at int) string {
	line = strings.TrimRight(line, "\r\n")
	if len(line) <= maxSnippetBytes {
		return strings.TrimSpace(line)
	}
	start := max(0, at-maxSnippetBytes/3)
	for start > 0 && !utf8.RuneStart(line[start]) {
		start--
	}
	end := min(len(line), start+maxSnippetBytes)
	for end < len(line) && !utf8.RuneStart(line[end]) {
		end--
	}
	out := line[start:end]
	if start > 0 {
		out = "…" + out
	}
	if end < len(line) {
		out += "…"
	}
	return out
}

// report is the result the model reads: the matches, then what cut the search short.
func (s *search) report(a searchFilesArgs) string {
	var b strings.Builder
	switch {
	case s.literalFolder:
		all := path.Join(s.glob.prefix, "**")
		return fmt.Sprintf("%s is a folder; use %q to match the files in it", shortQuote(a.Pattern), all)
	case len(s.out) > 0:
		b.WriteString(strings.Join(s.out, "\n"))
	case s.needle == "" || s.textFiles+s.binary == 0:
		fmt.Fprintf(&b, "no files match %s", shortQuote(a.Pattern))
	default:
		fmt.Fprintf(&b, "no line contains %q in the %s matching %s", a.Text, display.Count(s.textFiles, "text file", "text files"), shortQuote(a.Pattern))
		if s.binary > 0 {
			fmt.Fprintf(&b, " (%s skipped)", display.Count(s.binary, "binary file", "binary files"))
		}
	}
	if s.cut != "" {
		fmt.Fprintf(&b, "\n[%s]", s.cut)
	}
	if s.hardLinked > 0 {
		fmt.Fprintf(&b, "\n[%s not read]", display.Count(s.hardLinked, "file with more than one hard link was", "files with more than one hard link were"))
	}
	if s.partial > 0 {
		fmt.Fprintf(&b, "\n[%s searched only in the first %d MiB]", display.Count(s.partial, "large file was", "large files were"), maxSearchFileBytes>>20)
	}
	return b.String()
}

// patternError is a pathError about a glob pattern: the model should read "pattern".
type patternError struct{ *pathError }

func (e *patternError) Error() string {
	return "pattern" + strings.TrimPrefix(e.pathError.Error(), "path")
}

func asPatternError(err error) error {
	var pe *pathError
	if errors.As(err, &pe) {
		return &patternError{pe}
	}
	return err
}

// shortQuote quotes s, cut like pathError cuts paths, so a 4 KiB pattern cannot drown the message.
func shortQuote(s string) string {
	if len(s) > 80 {
		return fmt.Sprintf("%q...", s[:80])
	}
	return fmt.Sprintf("%q", s)
}
