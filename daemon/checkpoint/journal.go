package checkpoint

import (
	"bytes"
	"errors"
	"fmt"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// journal is the note a restore leaves while it runs (see the package doc).
type journal struct {
	ws         string
	to, before ID
	// from is set when only the change from checkpoint from to to is applied, and skip
	// names what it leaves out in the top folder.
	from ID
	skip []string
}

const (
	journalName  = "restore"
	journalMagic = "agentd-restore 1\n"
)

func (j *journal) encode() []byte {
	var e encoder
	e.b = append(e.b, journalMagic...)
	e.str(j.ws)
	e.uvarint(uint64(j.to))
	e.uvarint(uint64(j.before))
	if j.from != 0 {
		e.uvarint(uint64(j.from))
		e.uvarint(uint64(len(j.skip)))
		for _, n := range j.skip {
			e.str(n)
		}
	}
	return e.b
}

// readJournal returns the journal of a restore a crash interrupted, or nil.
func (s *Store) readJournal() (*journal, error) {
	b, err := readAt(s.root, journalName)
	if errors.Is(err, unix.ENOENT) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	d := decoder{b: bytes.TrimPrefix(b, []byte(journalMagic))}
	if len(d.b) == len(b) {
		d.err = errors.New("not a restore journal")
	}
	j := &journal{ws: d.str(), to: ID(d.uvarint()), before: ID(d.uvarint())}
	if len(d.b) > 0 {
		j.from = ID(d.uvarint())
		for n := d.uvarint(); n > 0 && d.err == nil; n-- {
			j.skip = append(j.skip, d.str())
		}
	}
	if d.err != nil {
		return nil, fmt.Errorf("restore journal %s is damaged: %w", filepath.Join(s.dir, journalName), d.err)
	}
	return j, nil
}
