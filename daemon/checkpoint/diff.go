package checkpoint

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/agentd/agentd/commands"
	"github.com/agentd/agentd/internal/display"
)

// ChangeKind is how one path differs between two states of a workspace.
type ChangeKind string

const (
	Created     ChangeKind = "created"
	Deleted     ChangeKind = "deleted"
	Modified    ChangeKind = "modified"     // content, or a symlink's target
	ModeChanged ChangeKind = "mode changed" // permissions only
	TypeChanged ChangeKind = "type changed" // a file became a folder, a symlink…
)

// Change is one path that differs.
type Change struct {
	Path string // relative to the workspace, exactly as named there (any bytes)
	Kind ChangeKind
	// OldType and NewType are "file", "folder", "symlink", "fifo", "socket" or "device";
	// "" on the side where the path does not exist.
	OldType, NewType string
	OldMode, NewMode uint32 // permission bits, with setuid, setgid and sticky
	OldSize, NewSize int64
	// OldTarget and NewTarget are a symlink's target, or the first name of a file
	// that is a hard link of it.
	OldTarget, NewTarget string
	// Added and Removed count lines, for text files.
	Added, Removed int
	Binary         bool
	// Note says why there is no line diff: binary, too large, not captured, cut.
	Note string
	// Unified is the unified diff of a text file (diff -u), the one rendering file
	// previews use.
	Unified string
}

// Diff is how a workspace differs between two checkpoints, or a checkpoint and now.
type Diff struct {
	From, To ID // To is 0 for the live workspace
	// Changes are in path order, folders before what they hold, at most MaxChanges.
	Changes []Change
	// Files and Folders count the changed paths; Added and Removed the changed lines of
	// the listed changes.
	Files, Folders int
	Added, Removed int
	Omitted        int // changes past MaxChanges, counted in Files and Folders only
	// Notices are what a live capture could not capture (DiffLive): changes there are
	// unknown, and a restore cannot undo them.
	Notices     []Notice
	MoreNotices int

	src  *Store // the store the trees a (From) and b (To) are in, for Denied
	a, b hash
	// partial: checkpoint From, To left something out (Info.Partial), which Denied
	// must then look for
	partial [2]bool
}

// Bounds on a diff: listed changes, the text a file may have to be diffed, and the
// unified text of the whole diff (a file past it keeps its line counts).
const (
	MaxChanges   = 2000
	maxDiffInput = 1 << 20
	maxDiffText  = 4 << 20
)

// Diff returns how the workspace changed from checkpoint from to checkpoint to, with
// the names skip in its top folder left out.
func (s *Store) Diff(ctx context.Context, from, to ID, skip ...string) (*Diff, error) {
	err := s.begin(ctx)
	defer s.mu.Unlock()
	if err != nil {
		return nil, err
	}
	r, err := readEach(s.readRecord, from, to)
	if err != nil {
		return nil, err
	}
	d, err := s.diff(r[0].root, r[1].root, skip...)
	if err != nil {
		return nil, err
	}
	d.From, d.To, d.partial = from, to, [2]bool{r[0].Partial, r[1].Partial}
	return d, nil
}

// DiffLive returns how the workspace ws changed since checkpoint from: what the step
// after it did so far, or what a restore to it would undo. It captures ws as a
// checkpoint does, without keeping a checkpoint.
func (s *Store) DiffLive(ctx context.Context, ws string, from ID) (*Diff, error) {
	err := s.begin(ctx)
	defer s.mu.Unlock()
	if err != nil {
		return nil, err
	}
	a, err := s.readRecord(from)
	if err != nil {
		return nil, err
	}
	var latest *Info
	if n := len(s.ids); n > 0 {
		if c, err := s.readRecord(s.ids[n-1]); err == nil {
			latest = &c
		}
	}
	c, err := s.capture(ctx, ws, latest, nil)
	if err != nil {
		return nil, fmt.Errorf("diff of %s: %w", ws, err)
	}
	if err := c.flush(); err != nil {
		return nil, fmt.Errorf("diff of %s: %w", ws, err)
	}
	d, err := s.diff(a.root, c.root)
	if err != nil {
		return nil, err
	}
	d.From, d.Notices, d.MoreNotices = from, c.notes.list, c.notes.more
	return d, nil
}

// diff compares the trees a and b, leaving out the names skip in the top folder.
func (s *Store) diff(a, b hash, skip ...string) (*Diff, error) {
	df := &differ{s: s, d: &Diff{src: s, a: a, b: b}, skip: nameSet(skip)}
	if a == b {
		return df.d, nil
	}
	t, err := readEach(s.readTree, a, b)
	if err != nil {
		return nil, err
	}
	if err := df.trees(t[0], t[1]); err != nil {
		return nil, err
	}
	return df.d, nil
}

type differ struct {
	s    *Store
	d    *Diff
	path []byte
	text int             // bytes of unified diff so far
	skip map[string]bool // names in the workspace's top folder left out
	// every lists every change, past MaxChanges, without line diffs, and only at and
	// on the way to the folders under names (all of them when under is nil).
	every bool
	under []string
}

// trees compares two folders' entries, in name order.
func (df *differ) trees(a, b tree) error {
	for i, j := 0, 0; i < len(a) || j < len(b); {
		var err error
		switch {
		case j == len(b) || i < len(a) && a[i].name < b[j].name:
			err = df.entry(&a[i], nil)
			i++
		case i == len(a) || b[j].name < a[i].name:
			err = df.entry(nil, &b[j])
			j++
		default:
			err = df.entry(&a[i], &b[j])
			i, j = i+1, j+1
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// entry compares one name's entries (nil where it does not exist).
func (df *differ) entry(a, b *entry) error {
	name := a
	if name == nil {
		name = b
	}
	if len(df.path) == 0 && df.skip[name.name] {
		return nil
	}
	n := len(df.path)
	df.path = appendName(df.path, name.name)
	defer func() { df.path = df.path[:n] }()
	if df.under != nil && !slices.ContainsFunc(df.under, func(r string) bool { return atOrUnder(string(df.path), r) || atOrUnder(r, string(df.path)) }) {
		return nil
	}
	if k := changeOf(a, b); k != "" {
		df.add(k, a, b)
	}
	if sameFolder(a, b) {
		return nil
	}
	// A folder on one side or both: what it holds differs too.
	ta, err := df.contents(a)
	if err != nil {
		return err
	}
	tb, err := df.contents(b)
	if err != nil {
		return err
	}
	return df.trees(ta, tb)
}

// contents is the tree of a captured folder, or nothing.
func (df *differ) contents(e *entry) (tree, error) {
	if e == nil || e.kind != kindDir || !e.captured() {
		return nil, nil
	}
	return df.s.subtree(e)
}

// changeOf is how b differs from a (either nil where the name does not exist), "" when
// it does not: the one rule for what a diff lists and what applying a change writes.
// A folder's own change is its mode; what it holds is compared entry by entry.
func changeOf(a, b *entry) ChangeKind {
	switch {
	case a == nil && b == nil:
		return ""
	case a == nil:
		return Created
	case b == nil:
		return Deleted
	case a.kind != b.kind:
		return TypeChanged
	case a.kind == kindDir && a.captured() != b.captured():
		return Modified
	case a.kind != kindDir && !sameContent(a, b):
		return Modified
	case a.mode != b.mode:
		return ModeChanged
	}
	return ""
}

// sameFolder reports whether a and b are captured folders holding the same tree.
func sameFolder(a, b *entry) bool {
	return a != nil && b != nil && a.kind == kindDir && b.kind == kindDir && a.captured() && b.captured() && a.hash == b.hash
}

// sameContent compares two entries of one kind, other than folders.
func sameContent(a, b *entry) bool {
	switch {
	case a.kind == kindSymlink:
		return a.target == b.target
	case a.kind != kindFile:
		return true // fifos, sockets and devices have no content
	case a.captured() && b.captured():
		return a.hash == b.hash && a.target == b.target
	}
	// Unknown content on one side: the same only if nothing about the file moved.
	return a.captured() == b.captured() && a.size == b.size && a.mtime == b.mtime &&
		a.ctime == b.ctime && a.ino == b.ino && a.dev == b.dev
}

// add records a change of the current path.
func (df *differ) add(k ChangeKind, a, b *entry) {
	d := df.d
	if (a == nil || a.kind == kindDir) && (b == nil || b.kind == kindDir) {
		d.Folders++
	} else {
		d.Files++
	}
	if len(d.Changes) >= MaxChanges && !df.every {
		d.Omitted++
		return
	}
	c := Change{Path: string(df.path), Kind: k}
	if a != nil {
		c.OldType, c.OldMode, c.OldSize, c.OldTarget = describe(a)
	}
	if b != nil {
		c.NewType, c.NewMode, c.NewSize, c.NewTarget = describe(b)
	}
	switch {
	case b != nil && !b.captured():
		c.Note = "not captured: " + b.note
	case a != nil && !a.captured():
		c.Note = "not captured before: " + a.note
	}
	if k != ModeChanged && !df.every {
		df.lines(&c, a, b)
	}
	d.Changes = append(d.Changes, c)
}

func describe(e *entry) (string, uint32, int64, string) {
	size := e.size
	if e.kind == kindSymlink {
		size = int64(len(e.target))
	}
	return e.kind.String(), e.mode, size, e.target
}

// lines fills in c's line diff when a file's text is on either side.
func (df *differ) lines(c *Change, a, b *entry) {
	old, oldOK := df.text1(c, a)
	now, nowOK := df.text1(c, b)
	if !oldOK || !nowOK || (a == nil || a.kind != kindFile) && (b == nil || b.kind != kindFile) {
		return
	}
	oldName, newName := "a/"+displayPath(c.Path), "b/"+displayPath(c.Path)
	if a == nil || a.kind != kindFile {
		oldName = "/dev/null"
	}
	if b == nil || b.kind != kindFile {
		newName = "/dev/null"
	}
	u := commands.UnifiedDiff(oldName, newName, old, now)
	for i, l := range strings.SplitAfter(u, "\n") {
		switch {
		case i < 2:
		case strings.HasPrefix(l, "+"):
			c.Added++
		case strings.HasPrefix(l, "-"):
			c.Removed++
		}
	}
	df.d.Added += c.Added
	df.d.Removed += c.Removed
	if df.text+len(u) > maxDiffText {
		c.Note = fmt.Sprintf("diff left out: the whole diff is over %d bytes", maxDiffText)
		return
	}
	df.text += len(u)
	c.Unified = u
}

// text1 returns the text of e when e is a file ("" otherwise), or false and a note on c
// when it has none to diff.
func (df *differ) text1(c *Change, e *entry) (string, bool) {
	switch {
	case e == nil || e.kind != kindFile:
		return "", true
	case !e.captured():
		c.Note = "not captured: " + e.note
		return "", false
	case e.size > maxDiffInput:
		c.Note = fmt.Sprintf("too large to diff: %d bytes", e.size)
		return "", false
	}
	b, err := readAt(df.s.objects, e.hash.String())
	if err != nil {
		c.Note = "content missing from the store"
		return "", false
	}
	if !utf8.Valid(b) || bytes.IndexByte(b, 0) >= 0 {
		c.Binary = true
		c.Note = fmt.Sprintf("binary: %d bytes", len(b))
		return "", false
	}
	return string(b), true
}

// Summary is the diff in one line: "changed 3 files (+12 −4)", or "no changes".
func (d *Diff) Summary() string {
	var what []string
	if d.Files > 0 {
		what = append(what, plural(d.Files, "file"))
	}
	if d.Folders > 0 {
		what = append(what, plural(d.Folders, "folder"))
	}
	if what == nil {
		return "no changes"
	}
	s := fmt.Sprintf("changed %s (+%d −%d", strings.Join(what, " and "), d.Added, d.Removed)
	if d.Omitted > 0 {
		s += fmt.Sprintf(" in the %d listed", len(d.Changes))
	}
	return s + ")"
}

func plural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return fmt.Sprintf("%d %ss", n, word)
}

// Text renders the diff for a person: the summary, one line per change, then the
// unified diffs. Paths are escaped (display.Escape), so a name cannot forge a line.
func (d *Diff) Text() string {
	var b strings.Builder
	b.WriteString(d.Summary() + "\n")
	if hidden := d.NotFullyShown(); len(hidden) > 0 {
		b.WriteString("not fully shown: " + display.Escape(strings.Join(hidden, "; "), display.Line) + "\n")
	}
	for _, c := range d.Changes {
		b.WriteString(c.line() + "\n")
	}
	if d.Omitted > 0 {
		fmt.Fprintf(&b, "… and %d more changes not listed\n", d.Omitted)
	}
	for _, n := range d.Notices {
		fmt.Fprintf(&b, "not captured now: %s %s\n", displayPath(n.Path), display.Escape(n.Problem, display.Line))
	}
	if d.MoreNotices > 0 {
		fmt.Fprintf(&b, "… and %d more not captured\n", d.MoreNotices)
	}
	for _, c := range d.Changes {
		if c.Unified != "" {
			b.WriteString("\n" + display.Escape(c.Unified, display.Text))
		}
	}
	return b.String()
}

// line is one change in one line: "modified file notes/a.txt (+3 −1)". Everything a
// change makes that its unified diff cannot show is said here: a created entry's mode,
// a symlink's target, a file's other name (a hard link).
func (c *Change) line() string {
	typ := c.NewType
	if typ == "" {
		typ = c.OldType
	}
	s := fmt.Sprintf("%s %s %s", c.Kind, typ, displayPath(c.Path))
	switch {
	case c.Kind == TypeChanged:
		s = fmt.Sprintf("%s %s: %s → %s", c.Kind, displayPath(c.Path), c.OldType, c.NewType)
	case c.Kind == ModeChanged:
		s += fmt.Sprintf(" %04o → %04o", c.OldMode, c.NewMode)
	case typ == "symlink" && c.Kind == Modified:
		s += " (" + display.Escape(c.OldTarget, display.Line) + " → " + display.Escape(c.NewTarget, display.Line) + ")"
	}
	switch {
	case c.Kind != ModeChanged && c.OldType != "" && c.NewType != "" && c.OldMode != c.NewMode:
		s += fmt.Sprintf(" (mode %04o → %04o)", c.OldMode, c.NewMode)
	case c.OldType == "" && c.NewType != "":
		s += fmt.Sprintf(" (mode %04o)", c.NewMode)
	}
	if c.NewMode&0o6000 != 0 && c.OldMode&0o6000 != c.NewMode&0o6000 {
		s += " (setuid or setgid: not applied)"
	}
	s += c.targets()
	if c.Added+c.Removed > 0 {
		s += fmt.Sprintf(" (+%d −%d)", c.Added, c.Removed)
	}
	if c.Note != "" {
		s += " (" + display.Escape(c.Note, display.Line) + ")"
	}
	return s
}

// targets says where a created, deleted or retyped symlink points, and which other
// name a file shares its content with (a hard link: a write to one is a write to both).
func (c *Change) targets() string {
	esc := func(p string) string { return display.Escape(p, display.Line) }
	var s string
	if c.NewType == "symlink" && c.OldType != "symlink" {
		s += " (→ " + esc(c.NewTarget) + ")"
	} else if c.OldType == "symlink" && c.NewType != "symlink" {
		s += " (was → " + esc(c.OldTarget) + ")"
	}
	oldLink, newLink := c.linkOf(c.OldType, c.OldTarget), c.linkOf(c.NewType, c.NewTarget)
	switch {
	case newLink == oldLink:
	case newLink != "" && c.OldType == "":
		s += " (a hard link of " + esc(newLink) + ")"
	case newLink != "":
		s += " (now a hard link of " + esc(newLink) + ")"
	case c.NewType != "":
		s += " (no longer a hard link of " + esc(oldLink) + ")"
	}
	return s
}

// linkOf is the first name of a file that is a hard link of it, or "".
func (*Change) linkOf(typ, target string) string {
	if typ == "file" {
		return target
	}
	return ""
}

// NotFullyShown names what the diff's text cannot show whole, one phrase each (raw: Text
// escapes them), content
// that is binary, too large, left out or not captured, and changes past MaxChanges. A
// person shown the diff is shown this too, so nothing the text hid is approved unseen.
func (d *Diff) NotFullyShown() []string {
	var out []string
	for _, c := range d.Changes {
		switch {
		case c.Note != "" && c.Unified == "" && (c.NewType == "file" || c.OldType == "file"):
			out = append(out, c.Path+" ("+c.Note+")")
		case c.NewType == kindSocket.String():
			out = append(out, c.Path+" (a socket, made with nothing listening on it)")
		case c.NewType == kindDevice.String():
			out = append(out, c.Path+" (a device, which is recorded without its number and never made)")
		}
	}
	if d.Omitted > 0 {
		out = append(out, fmt.Sprintf("%d changes not listed", d.Omitted))
	}
	if len(d.Notices) > 0 || d.MoreNotices > 0 {
		out = append(out, plural(len(d.Notices)+d.MoreNotices, "path")+" not captured now")
	}
	return out
}

// displayPath is a workspace path as a person is shown it: controls, bidi and bytes
// that are not UTF-8 escaped.
func displayPath(p string) string { return display.Escape(p, display.Line) }
