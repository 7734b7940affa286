package checkpoint

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
)

// hash names an object: the SHA-256 of its bytes.
type hash [sha256.Size]byte

func (h hash) String() string { return hex.EncodeToString(h[:]) }

// kind is what a workspace entry is, one byte in a tree object.
type kind byte

const (
	kindFile    kind = 'f'
	kindDir     kind = 'd'
	kindSymlink kind = 'l'
	kindFifo    kind = 'p'
	kindSocket  kind = 's'
	kindDevice  kind = 'c' // character or block device
	kindUnknown kind = '?' // could not even be looked at (always with flagUncaptured)
)

func (k kind) String() string {
	switch k {
	case kindFile:
		return "file"
	case kindDir:
		return "folder"
	case kindSymlink:
		return "symlink"
	case kindFifo:
		return "fifo"
	case kindSocket:
		return "socket"
	case kindDevice:
		return "device"
	}
	return "unknown entry"
}

// Entry flags.
const (
	// flagUncaptured: the entry's content is not in the store; note says why. A restore
	// leaves the path as it finds it.
	flagUncaptured = 1 << iota
	// flagRacy: the file changed so close to its capture that a later change could keep
	// the same timestamps, so its stat data must not stand for its content next time.
	flagRacy
	// flagLinked: the file had more than one name when captured (a hard link).
	flagLinked
	// flagInline: the folder's tree is small and kept in the entry (inline), not as an
	// object of its own.
	flagInline
	// flagMeta: the entry records its owner and extended attributes (every entry
	// captured since they were; older trees lack them).
	flagMeta
	// flagStamped: a folder's or symlink's entry records its mtime (older trees lack it).
	flagStamped
	// flagXattrs: the entry keeps its extended attributes themselves (xattrSet), not only
	// their digest, so a restore can put them back: those up to maxXattrSet bytes.
	flagXattrs
	// flagTreeStamp: a folder not captured keeps in hash the stamp of all it holds
	// (stamp.go), by which the next checkpoint can tell it unchanged.
	flagTreeStamp
)

// maxXattrSet is the most bytes of extended attributes an entry keeps to restore.
const maxXattrSet = 4096

// inlineMax is the largest tree kept inline in its parent's: a chain of small folders
// (a deep tree, node_modules) then costs a few objects, not one each.
const inlineMax = 512

// entry is one name in a folder, as captured.
type entry struct {
	name  string
	kind  kind
	mode  uint32 // permission bits with setuid, setgid and sticky (st_mode & 07777)
	flags uint8
	// The stat data that lets the next capture trust a file unchanged, as git's index
	// does: files only.
	size         int64
	mtime, ctime int64 // nanoseconds since the epoch
	ino, dev     uint64
	hash         hash   // a file's content, a folder's tree; set when captured
	target       string // a symlink's target; a file's first name when it is a hard link of it
	note         string // why it is not captured
	inline       string // a small folder's tree object (flagInline); hash is its hash
	// uid, gid and xattrs (the SHA-256 of a file's or folder's extended attributes, ""
	// for none) are what the stale check compares besides content (flagMeta).
	uid, gid uint32
	xattrs   string
	xattrSet string // the extended attributes, encoded as xattrDigest hashes them (flagXattrs)
}

func (e *entry) captured() bool { return e.flags&flagUncaptured == 0 }

// hasHash says whether the encoding carries a hash.
func (e *entry) hasHash() bool {
	return (e.kind == kindFile || e.kind == kindDir) && e.captured() && e.flags&flagInline == 0
}

// tree is a folder's entries, sorted by name (bytewise).
type tree []entry

// treeMagic starts every tree object.
const treeMagic = "agentd-tree 1\n"

// encodeTree writes t in the tree object format (see the package doc).
func encodeTree(t tree) []byte {
	var e encoder
	e.b = make([]byte, 0, len(treeMagic)+len(t)*72)
	e.b = append(e.b, treeMagic...)
	e.uvarint(uint64(len(t)))
	for i := range t {
		x := &t[i]
		e.str(x.name)
		e.b = append(e.b, byte(x.kind), x.flags)
		e.uvarint(uint64(x.mode))
		if x.flags&flagMeta != 0 {
			e.uvarint(uint64(x.uid))
			e.uvarint(uint64(x.gid))
			e.str(x.xattrs)
		}
		if x.flags&flagXattrs != 0 {
			e.str(x.xattrSet)
		}
		if x.kind == kindFile {
			e.uvarint(uint64(x.size))
			e.varint(x.mtime)
			e.varint(x.ctime)
			e.uvarint(x.ino)
			e.uvarint(x.dev)
		} else if x.flags&flagStamped != 0 {
			e.varint(x.mtime)
		}
		if x.hasHash() {
			e.b = append(e.b, x.hash[:]...)
		}
		if x.flags&flagInline != 0 {
			e.str(x.inline)
		}
		if x.kind == kindSymlink || x.kind == kindFile {
			e.str(x.target)
		}
		if !x.captured() {
			e.str(x.note)
		}
		if x.flags&flagTreeStamp != 0 {
			e.b = append(e.b, x.hash[:]...)
		}
	}
	return e.b
}

// decodeTree reads a tree object.
func decodeTree(b []byte) (tree, error) {
	var t tree
	err := scanTree(b, true, func(x *entry, _ []byte) error {
		if x.name == "" || len(t) > 0 && t[len(t)-1].name >= x.name {
			return errors.New("names out of order")
		}
		t = append(t, *x)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("tree object: %w", err)
	}
	return t, nil
}

// scanTree calls fn with each entry of the tree object b, and an inline tree as a part
// of b. With text false it skips names, symlink targets and notes, and leaves inline
// trees in bytes: what collection needs to follow references, without copying a byte.
func scanTree(b []byte, text bool, fn func(x *entry, inline []byte) error) error {
	if len(b) < len(treeMagic) || string(b[:len(treeMagic)]) != treeMagic {
		return errors.New("not a tree object")
	}
	d := decoder{b: b[len(treeMagic):]}
	n := d.uvarint()
	if n > uint64(len(d.b)) { // every entry takes bytes: a count past them is damage
		return errors.New("bad entry count")
	}
	var x entry // one for all: fn must not keep the pointer
	for range n {
		x = entry{}
		x.name = d.text(text)
		x.kind, x.flags = kind(d.byte()), d.byte()
		x.mode = uint32(d.uvarint())
		if x.flags&flagMeta != 0 {
			x.uid, x.gid = uint32(d.uvarint()), uint32(d.uvarint())
			x.xattrs = d.text(text)
		}
		if x.flags&flagXattrs != 0 {
			x.xattrSet = d.text(text)
		}
		if x.kind == kindFile {
			x.size = int64(d.uvarint())
			x.mtime = d.varint()
			x.ctime = d.varint()
			x.ino = d.uvarint()
			x.dev = d.uvarint()
		} else if x.flags&flagStamped != 0 {
			x.mtime = d.varint()
		}
		if x.hasHash() {
			copy(x.hash[:], d.take(len(x.hash)))
		}
		var inline []byte
		if x.flags&flagInline != 0 {
			inline = d.take(int(min(d.uvarint(), uint64(len(d.b)+1))))
			if text {
				x.inline, x.hash = string(inline), sha256.Sum256(inline)
			}
		}
		if x.kind == kindSymlink || x.kind == kindFile {
			x.target = d.text(text)
		}
		if !x.captured() {
			x.note = d.text(text)
		}
		if x.flags&flagTreeStamp != 0 {
			copy(x.hash[:], d.take(len(x.hash)))
		}
		if d.err != nil {
			return d.err
		}
		if err := fn(&x, inline); err != nil {
			return err
		}
	}
	if d.err == nil && len(d.b) != 0 {
		d.err = errors.New("trailing bytes")
	}
	return d.err
}

// find returns the entry named name in t, or nil.
func (t tree) find(name string) *entry {
	lo, hi := 0, len(t)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if t[m].name < name {
			lo = m + 1
		} else {
			hi = m
		}
	}
	if lo < len(t) && t[lo].name == name {
		return &t[lo]
	}
	return nil
}

// encoder appends the varint and length-prefixed fields objects and records are made of.
type encoder struct{ b []byte }

func (e *encoder) uvarint(v uint64) { e.b = binary.AppendUvarint(e.b, v) }
func (e *encoder) varint(v int64)   { e.b = binary.AppendVarint(e.b, v) }
func (e *encoder) str(s string)     { e.uvarint(uint64(len(s))); e.b = append(e.b, s...) }

// decoder reads what encoder wrote; the first problem sticks in err and zeroes the rest.
type decoder struct {
	b   []byte
	err error
}

func (d *decoder) fail(what string) {
	if d.err == nil {
		d.err = errors.New(what)
	}
	d.b = nil
}

func (d *decoder) uvarint() uint64 {
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.fail("bad number")
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) varint() int64 {
	v, n := binary.Varint(d.b)
	if n <= 0 {
		d.fail("bad number")
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) take(n int) []byte {
	if n < 0 || n > len(d.b) {
		d.fail("truncated")
		return make([]byte, max(n, 0))
	}
	v := d.b[:n]
	d.b = d.b[n:]
	return v
}

func (d *decoder) byte() byte { return d.take(1)[0] }

func (d *decoder) str() string { return d.text(true) }

// text reads a string, or skips it when keep is false.
func (d *decoder) text(keep bool) string {
	n := d.uvarint()
	if n > uint64(len(d.b)) {
		d.fail("truncated")
		return ""
	}
	b := d.take(int(n))
	if !keep {
		return ""
	}
	return string(b)
}
