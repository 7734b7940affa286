package checkpoint

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/agentd/agentd/internal/randid"
)

// ID names a checkpoint in its store: 1, 2, 3… in the order they were taken.
type ID uint64

// ErrNotFound: no checkpoint with that ID is kept (never taken, or dropped by retention).
var ErrNotFound = errors.New("no such checkpoint")

// Options bound what a store keeps. A zero field takes its default; a negative one
// means no bound.
type Options struct {
	// MaxFileBytes is the largest file a checkpoint captures (default 64 MiB).
	MaxFileBytes int64
	// MaxStepBytes bounds the new content one checkpoint adds to the store (default 256 MiB).
	MaxStepBytes int64
	// MaxStoreBytes bounds the store (default 1 GiB), and a workspace whose content
	// alone is larger is captured only up to it. The checkpoints retention keeps whatever
	// it says (the newest, held ones) may pass it, never twice it: past that new content
	// is not captured and the checkpoint is Partial.
	MaxStoreBytes int64
	// MinFreeBytes is the free space kept on the store's file system, the state dir's
	// (default 512 MiB): new content that would leave less is not captured.
	MinFreeBytes int64
	// MaxEntries bounds the files and folders one checkpoint captures (default 1,000,000):
	// past it the rest of the workspace is not captured, the checkpoint is Partial and a
	// notice names the first folder left out, so a workspace of millions of files costs
	// a bounded walk.
	MaxEntries int
	// KeepCount bounds how many checkpoints are kept (default 100).
	//
	// Past either bound the oldest checkpoints are dropped until a tenth of the bound is
	// free, so the work of dropping (reading every kept checkpoint's listings) is done
	// once every tenth of KeepCount checkpoints, not at each.
	KeepCount int
	// Ephemeral skips every fsync and syncfs, the store's and a restore's: a crash or a
	// power loss may then lose checkpoints or leave objects damaged (a restore checks
	// every object's hash, so it fails rather than write a damaged one). For stores
	// whose checkpoints can be worked out again: effect previews.
	Ephemeral bool
}

// Defaults for Options.
const (
	DefaultMaxFileBytes  = 64 << 20
	DefaultMaxStepBytes  = 256 << 20
	DefaultMaxStoreBytes = 1 << 30
	DefaultMinFreeBytes  = 512 << 20
	DefaultKeepCount     = 100
	DefaultMaxEntries    = 1_000_000
)

func (o Options) withDefaults() Options {
	bound := func(v *int64, def int64) {
		switch {
		case *v == 0:
			*v = def
		case *v < 0:
			*v = 1<<63 - 1
		}
	}
	bound(&o.MaxFileBytes, DefaultMaxFileBytes)
	bound(&o.MaxStepBytes, DefaultMaxStepBytes)
	bound(&o.MaxStoreBytes, DefaultMaxStoreBytes)
	if o.MinFreeBytes == 0 {
		o.MinFreeBytes = DefaultMinFreeBytes
	}
	if o.MaxEntries == 0 {
		o.MaxEntries = DefaultMaxEntries
	} else if o.MaxEntries < 0 {
		o.MaxEntries = 1<<31 - 1
	}
	switch {
	case o.KeepCount == 0:
		o.KeepCount = DefaultKeepCount
	case o.KeepCount < 0:
		o.KeepCount = 1<<31 - 1
	}
	return o
}

// Info describes a checkpoint.
type Info struct {
	ID   ID
	Time time.Time
	// Files is how many entries other than folders the workspace held; Bytes the size
	// of the content captured.
	Files int
	Bytes int64
	// NewBytes is what taking it added to the store (new content and folder listings).
	NewBytes int64
	// Partial says some content was not captured: a restore leaves those paths as it
	// finds them. Notices name them (Lost) with why, and what else is worth knowing.
	Partial     bool
	Notices     []Notice
	MoreNotices int // notices past the ones kept

	root  hash
	links bool // some file has several names in the workspace
}

// Root is the SHA-256 of the checkpoint's root folder listing, in hex: it names the whole
// tree captured, so two checkpoints with one Root hold the same workspace, and a record
// that claims an id but holds another tree is told apart from the one shown.
func (c Info) Root() string { return c.root.String() }

// Notice is something a checkpoint or restore did not do as asked, about one path.
type Notice struct {
	Path    string // relative to the workspace, exactly as named there (any bytes)
	Problem string // what happened, for a person: "is 2147483648 bytes, over the 67108864-byte limit per file"
	// Lost says the path's content is not in the checkpoint, or was not put back.
	Lost bool
}

// maxNotices bounds the notices one checkpoint or restore keeps; the rest are counted.
const maxNotices = 100

// notices collects Notice values up to maxNotices.
type notices struct {
	list []Notice
	more int
}

func (n *notices) add(path, problem string, lost bool) {
	if len(n.list) < maxNotices {
		n.list = append(n.list, Notice{Path: path, Problem: problem, Lost: lost})
	} else {
		n.more++
	}
}

// Problem says in one sentence why the checkpoint cannot be rewound exactly, naming
// what was not captured; "" when it can.
func (c Info) Problem() string {
	if !c.Partial {
		return ""
	}
	var lost []Notice
	for _, n := range c.Notices {
		if n.Lost {
			lost = append(lost, n)
		}
	}
	if len(lost) == 0 {
		return fmt.Sprintf("checkpoint %d is partial: some content was not captured", c.ID)
	}
	s := fmt.Sprintf("checkpoint %d cannot be rewound exactly: %s %s", c.ID, displayPath(lost[0].Path), lost[0].Problem)
	if more := len(lost) - 1 + c.MoreNotices; more > 0 {
		s += fmt.Sprintf(" (and %d more not captured)", more)
	}
	return s
}

// Store is the checkpoint store of one workspace: a folder the daemon gives it,
// outside every workspace (see the package doc for what is in it). One process at a
// time holds it (a lock file); its methods may be called from several goroutines.
type Store struct {
	dir string
	opt Options

	mu                         sync.Mutex
	lock                       *os.File
	root, objects, records, tm int // open folders of the store

	loaded bool  // ids and bytes are known
	ids    []ID  // the checkpoints kept, oldest first
	bytes  int64 // size of the objects on disk
	// kept is bytes after the last collection: held checkpoints may keep it over
	// MaxStoreBytes, and then only a tenth more starts the next one, not each checkpoint.
	kept    int64
	pending *journal
	lastOf  map[string]ID // the latest checkpoint of each folder captured since Open
	// held are checkpoints retention keeps whatever the bounds say (Hold); replaced
	// whole, never changed in place, so a collection running may read the one it got.
	held map[ID]bool
	// stepCap bounds the new content of the checkpoint being taken (CheckpointWithin); -1: none.
	stepCap int64

	// collecting is a collection running after a checkpoint returned (the next call
	// waits for it); collectErr is how it failed, told by the next call.
	collecting sync.WaitGroup
	collectErr error

	// watch lets a checkpoint where nothing happened skip the walk (watch.go); walks
	// counts the checkpoints that walked the workspace.
	watch *watcher
	walks int
	// lentLeft: a walk ended without giving back every mode it lent, and its note
	// (lent.go) is kept; the next walk gives them back first.
	lentLeft bool
}

// Open opens the store in dir, creating it if needed. It takes the store's lock, so a
// second Open of the same folder fails until the first is closed. It reads nothing of a
// workspace: a restore a crash interrupted is finished by Recover or the next call.
func Open(dir string, opt Options) (*Store, error) {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("checkpoint store: %w", err)
	}
	s := &Store{dir: dir, opt: opt.withDefaults(), root: -1, objects: -1, records: -1, tm: -1, stepCap: -1, lastOf: map[string]ID{}}
	if err := s.open(); err != nil {
		s.Close()
		return nil, fmt.Errorf("checkpoint store %s: %w", dir, err)
	}
	return s, nil
}

func (s *Store) open() error {
	for _, sub := range []string{"objects", "checkpoints", "tmp"} {
		if err := os.MkdirAll(filepath.Join(s.dir, sub), 0o700); err != nil {
			return err
		}
	}
	var err error
	if s.lock, err = os.OpenFile(filepath.Join(s.dir, "lock"), os.O_RDWR|os.O_CREATE, 0o600); err != nil {
		return err
	}
	if err := unix.Flock(int(s.lock.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		return fmt.Errorf("in use by another process (%w)", err)
	}
	for _, d := range []struct {
		fd   *int
		name string
	}{{&s.root, ""}, {&s.objects, "objects"}, {&s.records, "checkpoints"}, {&s.tm, "tmp"}} {
		if *d.fd, err = unix.Open(filepath.Join(s.dir, d.name), unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0); err != nil {
			return err
		}
	}
	// Temporary files are what a crash left half-done: nothing refers to them.
	names, err := listFolder(s.tm)
	if err != nil {
		return err
	}
	for _, n := range names {
		unix.Unlinkat(s.tm, n, 0)
	}
	if err := recoverLent(s.root); err != nil { // before a restore is finished: it lends again what it needs
		return err
	}
	s.pending, err = s.readJournal()
	s.watch = newWatcher()
	return err
}

// Close releases the store and its lock, after a collection still running.
func (s *Store) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.collecting.Wait()
	for _, fd := range []*int{&s.root, &s.objects, &s.records, &s.tm} {
		if *fd >= 0 {
			unix.Close(*fd)
			*fd = -1
		}
	}
	s.watch.close()
	if s.lock != nil {
		s.lock.Close() // releases the flock
		s.lock = nil
	}
	return nil
}

// begin starts a call: it locks the store, waits for a collection still running and
// readies the store. The caller unlocks mu, whatever begin returns.
func (s *Store) begin(ctx context.Context) error {
	s.mu.Lock()
	s.collecting.Wait()
	if err := s.collectErr; err != nil {
		s.collectErr = nil
		return fmt.Errorf("checkpoint store: dropping old checkpoints failed: %w", err)
	}
	return s.ready(ctx)
}

// ready finishes an interrupted restore, then loads what the store keeps. Callers hold mu.
func (s *Store) ready(ctx context.Context) error {
	if s.lock == nil {
		return errors.New("checkpoint store is closed")
	}
	if err := s.recover(ctx); err != nil {
		return err
	}
	if s.loaded {
		return nil
	}
	names, err := listFolder(s.records)
	if err != nil {
		return fmt.Errorf("checkpoint store: %w", err)
	}
	s.ids = s.ids[:0]
	for _, n := range names {
		if id, err := strconv.ParseUint(n, 10, 64); err == nil && n == recordName(ID(id)) {
			s.ids = append(s.ids, ID(id))
		}
	}
	// What a crash left renamed but not yet synced is made durable before anything
	// builds on it.
	if err := errors.Join(unix.Fsync(s.objects), unix.Fsync(s.records)); err != nil {
		return fmt.Errorf("checkpoint store: %w", err)
	}
	// A collection finds the store's size and removes what a crash left unreferenced.
	if err := s.collect(0, s.held); err != nil {
		return err
	}
	s.loaded = true
	return nil
}

// Recover finishes a restore a crash interrupted (see Restore); it does nothing when
// there is none. Every other method calls it first; the daemon calls it at start so an
// agent never sees a workspace half rewound.
func (s *Store) Recover(ctx context.Context) error {
	err := s.begin(ctx)
	s.mu.Unlock()
	return err
}

// List returns the checkpoints kept, oldest first.
func (s *Store) List(ctx context.Context) ([]Info, error) {
	err := s.begin(ctx)
	defer s.mu.Unlock()
	if err != nil {
		return nil, err
	}
	out := make([]Info, 0, len(s.ids))
	for _, id := range s.ids {
		c, err := s.readRecord(id)
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, nil
}

// Get returns the checkpoint id.
func (s *Store) Get(ctx context.Context, id ID) (Info, error) {
	err := s.begin(ctx)
	defer s.mu.Unlock()
	if err != nil {
		return Info{}, err
	}
	return s.readRecord(id)
}

// The record format; see the package doc.
const recordMagic = "agentd-checkpoint 1\n"

func recordName(id ID) string { return fmt.Sprintf("%020d", uint64(id)) }

func encodeRecord(c Info) []byte {
	var e encoder
	e.b = append(e.b, recordMagic...)
	e.uvarint(uint64(c.ID))
	e.varint(c.Time.UnixNano())
	e.b = append(e.b, c.root[:]...)
	e.uvarint(uint64(c.Files))
	e.uvarint(uint64(c.Bytes))
	e.uvarint(uint64(c.NewBytes))
	e.uvarint(uint64(len(c.Notices)))
	for _, n := range c.Notices {
		e.str(n.Path)
		e.str(n.Problem)
		e.b = append(e.b, boolByte(n.Lost))
	}
	e.uvarint(uint64(c.MoreNotices))
	e.b = append(e.b, boolByte(c.Partial), boolByte(c.links))
	return e.b
}

func decodeRecord(b []byte) (Info, error) {
	var c Info
	if len(b) < len(recordMagic) || string(b[:len(recordMagic)]) != recordMagic {
		return c, errors.New("not a checkpoint record")
	}
	d := decoder{b: b[len(recordMagic):]}
	c.ID = ID(d.uvarint())
	c.Time = time.Unix(0, d.varint())
	copy(c.root[:], d.take(len(c.root)))
	c.Files = int(d.uvarint())
	c.Bytes = int64(d.uvarint())
	c.NewBytes = int64(d.uvarint())
	n := d.uvarint()
	for i := uint64(0); i < n && d.err == nil; i++ {
		c.Notices = append(c.Notices, Notice{Path: d.str(), Problem: d.str(), Lost: d.byte() == 1})
	}
	c.MoreNotices = int(d.uvarint())
	c.Partial = d.byte() == 1
	c.links = d.byte() == 1
	if d.err == nil && len(d.b) != 0 {
		d.err = errors.New("trailing bytes")
	}
	if d.err != nil {
		return c, fmt.Errorf("checkpoint record: %w", d.err)
	}
	return c, nil
}

func boolByte(b bool) byte {
	if b {
		return 1
	}
	return 0
}

func (s *Store) readRecord(id ID) (Info, error) {
	if _, ok := slices.BinarySearch(s.ids, id); !ok && s.loaded {
		return Info{}, fmt.Errorf("checkpoint %d: %w", id, ErrNotFound)
	}
	b, err := readAt(s.records, recordName(id))
	if errors.Is(err, unix.ENOENT) {
		return Info{}, fmt.Errorf("checkpoint %d: %w", id, ErrNotFound)
	}
	if err != nil {
		return Info{}, fmt.Errorf("checkpoint %d: %w", id, err)
	}
	c, err := decodeRecord(b)
	if err == nil && c.ID != id {
		err = fmt.Errorf("record holds checkpoint %d", c.ID)
	}
	if err != nil {
		return Info{}, fmt.Errorf("checkpoint %d is damaged: %w", id, err)
	}
	return c, nil
}

// writeRecord makes c durable: temp file, fsync, rename, fsync of the folder.
func (s *Store) writeRecord(c Info) error {
	if err := s.writeDurable(s.records, recordName(c.ID), encodeRecord(c)); err != nil {
		return fmt.Errorf("checkpoint store: writing checkpoint %d: %w", c.ID, err)
	}
	i, _ := slices.BinarySearch(s.ids, c.ID)
	s.ids = slices.Insert(s.ids, i, c.ID)
	return nil
}

// writeDurable writes data to name in the folder dir so that it is there whole or not
// at all, and stays there through a crash: temp file, fsync, rename, fsync of dir.
func (s *Store) writeDurable(dir int, name string, data []byte) error {
	tmp, err := s.writeTemp(data, true)
	if err == nil {
		err = unix.Renameat(s.tm, tmp, dir, name)
		if err != nil {
			unix.Unlinkat(s.tm, tmp, 0)
		}
	}
	if err != nil {
		return err
	}
	step()
	return s.fsync(dir)
}

// writeTemp writes data to a new file in the store's tmp folder, fsynced if sync,
// and returns its name.
func (s *Store) writeTemp(data []byte, sync bool) (string, error) {
	name, f, err := s.createTemp()
	if err != nil {
		return "", err
	}
	_, err = f.Write(data)
	if err == nil && sync && !s.opt.Ephemeral {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		unix.Unlinkat(s.tm, name, 0)
		return "", err
	}
	step()
	return name, nil
}

// createTemp creates a new file in the store's tmp folder.
func (s *Store) createTemp() (string, *os.File, error) {
	name := randid.Hex(12)
	fd, err := unix.Openat(s.tm, name, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return "", nil, err
	}
	return name, os.NewFile(uintptr(fd), name), nil
}

// readAt reads the file name in the folder dir.
func readAt(dir int, name string) ([]byte, error) {
	return readInto(dir, name, make([]byte, 0, 8<<10))
}

// readInto reads the file name in the folder dir into b, grown as needed, in as few
// system calls as it can: a checkpoint reads a folder listing for every folder of the
// workspace, and a collection every listing of every checkpoint.
func readInto(dir int, name string, b []byte) ([]byte, error) {
	fd, err := unix.Openat(dir, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	defer unix.Close(fd)
	for {
		n, err := unix.Read(fd, b[len(b):cap(b)])
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return nil, err
		}
		if n == 0 {
			return b, nil
		}
		if b = b[:len(b)+n]; len(b) == cap(b) {
			b = append(b, 0)[:len(b)] // full: make room and read on
		}
	}
}

// readTree reads the tree object h.
func (s *Store) readTree(h hash) (tree, error) {
	b, err := readAt(s.objects, h.String())
	if err != nil {
		return nil, fmt.Errorf("checkpoint store: folder listing %s: %w", h, err)
	}
	t, err := decodeTree(b)
	if err != nil {
		return nil, fmt.Errorf("checkpoint store: folder listing %s is damaged: %w", h, err)
	}
	return t, nil
}

// listFolder returns the names in one of the store's folders, held open from Open on.
func listFolder(fd int) ([]string, error) {
	if _, err := unix.Seek(fd, 0, 0); err != nil {
		return nil, err
	}
	return readNames(fd, make([]byte, 32<<10))
}

// subtree returns the tree of the captured folder e, inline or an object.
func (s *Store) subtree(e *entry) (tree, error) {
	if e.flags&flagInline != 0 {
		t, err := decodeTree([]byte(e.inline))
		if err != nil {
			return nil, fmt.Errorf("checkpoint store: folder listing %s is damaged: %w", e.hash, err)
		}
		return t, nil
	}
	return s.readTree(e.hash)
}

// hasObject reports whether the object h is in the store.
func (s *Store) hasObject(h hash) bool {
	var st unix.Stat_t
	return unix.Fstatat(s.objects, h.String(), &st, unix.AT_SYMLINK_NOFOLLOW) == nil
}

// testHookStep, set by tests, runs after every step that changes the disk: the crash
// tests kill the process there.
var testHookStep func()

func step() {
	if testHookStep != nil {
		testHookStep()
	}
}

// fsync flushes the folder or file fd, unless the store is Ephemeral.
func (s *Store) fsync(fd int) error {
	if s.opt.Ephemeral {
		return nil
	}
	return unix.Fsync(fd)
}

// syncfs flushes the filesystem of fd, unless the store is Ephemeral.
func (s *Store) syncfs(fd int) error {
	if s.opt.Ephemeral {
		return nil
	}
	return unix.Syncfs(fd)
}
