package memory

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"hash/fnv"
	"io"
	"math"
	"os"
	"sort"
	"sync"
)

// Embedder turns texts into vectors, one per text, all of the same length. The daemon
// implements it with Ollama's /api/embed.
type Embedder interface {
	Embed(ctx context.Context, texts []string) ([][]float32, error)
}

// vectorStore keeps a generation's embeddings in an append-only file, vectors.bin, next to
// the Bleve index, and only a small directory of them in memory (about 150 bytes a memory:
// id, agent, kind, offset). A search reads the candidate vectors in place through a
// read-only mapping of the file (page cache, not heap; ReadAt where mmap is unavailable) and
// scores them by brute force. That is linear in the number of memories one agent can see
// (its own plus shared ones) — see BenchmarkVectorSearch, a few milliseconds per 10,000
// 768-dim vectors. It is meant for agents' memories, not for millions; beyond that the BM25
// side still serves. Stale records (replaced or deleted) stay in the file until the
// next Rebuild writes a fresh one.
//
// Record: u32 length, u32 CRC-32 of the payload, payload. Payload: op byte (1 put, 2 delete),
// uvarint-prefixed id; for put also uvarint-prefixed agent and kind, u64 FNV-1a hash of the
// text, u32 dims and dims float32 (little endian, normalized to unit length).
type vectorStore struct {
	mu        sync.RWMutex
	f         *os.File
	w         *bufio.Writer
	size      int64
	mm        []byte // read-only shared mapping of the file (nil: use ReadAt)
	mapFailed bool
	entries   map[string]*vecEntry
	byAgent   map[string]map[string]*vecEntry
}

type vecEntry struct {
	agent string
	kind  Kind
	hash  uint64
	off   int64 // offset of the vector data
	dims  int
}

const (
	vecPut    = 1
	vecDelete = 2
)

// openVectorStore opens or creates path and loads its directory. A torn or damaged tail (a
// crash mid-append) is cut off: those memories simply have no vector.
func openVectorStore(path string) (*vectorStore, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("memory: vectors: %w", err)
	}
	s := &vectorStore{f: f, entries: map[string]*vecEntry{}, byAgent: map[string]map[string]*vecEntry{}}
	good, err := s.load()
	if err != nil {
		f.Close()
		return nil, err
	}
	if fi, err := f.Stat(); err == nil && fi.Size() > good {
		if err := f.Truncate(good); err != nil {
			f.Close()
			return nil, fmt.Errorf("memory: vectors: %w", err)
		}
	}
	s.size = good
	if _, err := f.Seek(good, io.SeekStart); err != nil {
		f.Close()
		return nil, err
	}
	s.w = bufio.NewWriterSize(f, 256<<10)
	return s, nil
}

// load reads every record and returns the offset just past the last good one.
func (s *vectorStore) load() (int64, error) {
	r := bufio.NewReaderSize(io.NewSectionReader(s.f, 0, math.MaxInt64), 1<<20)
	var off int64
	var hdr [8]byte
	for {
		if _, err := io.ReadFull(r, hdr[:]); err != nil {
			return off, nil
		}
		n := binary.LittleEndian.Uint32(hdr[:4])
		if n > 64<<20 {
			return off, nil
		}
		payload := make([]byte, n)
		if _, err := io.ReadFull(r, payload); err != nil || crc32.ChecksumIEEE(payload) != binary.LittleEndian.Uint32(hdr[4:]) {
			return off, nil
		}
		if err := s.apply(payload, off+8); err != nil {
			return off, nil
		}
		off += 8 + int64(n)
	}
}

// apply decodes one payload found at payloadOff and updates the directory.
func (s *vectorStore) apply(p []byte, payloadOff int64) error {
	bad := errors.New("bad vector record")
	if len(p) < 1 {
		return bad
	}
	op, rest := p[0], p[1:]
	id, rest, ok := readString(rest)
	if !ok {
		return bad
	}
	if op == vecDelete {
		s.remove(id)
		return nil
	}
	agent, rest, ok1 := readString(rest)
	kind, rest, ok2 := readString(rest)
	if op != vecPut || !ok1 || !ok2 || len(rest) < 12 {
		return bad
	}
	e := &vecEntry{agent: agent, kind: Kind(kind), hash: binary.LittleEndian.Uint64(rest)}
	e.dims = int(binary.LittleEndian.Uint32(rest[8:]))
	if len(rest)-12 != 4*e.dims {
		return bad
	}
	e.off = payloadOff + int64(len(p)-len(rest)) + 12
	s.remove(id)
	s.entries[id] = e
	m := s.byAgent[agent]
	if m == nil {
		m = map[string]*vecEntry{}
		s.byAgent[agent] = m
	}
	m[id] = e
	return nil
}

func (s *vectorStore) remove(id string) {
	if e, ok := s.entries[id]; ok {
		delete(s.entries, id)
		delete(s.byAgent[e.agent], id)
	}
}

func readString(p []byte) (string, []byte, bool) {
	n, k := binary.Uvarint(p)
	if k <= 0 || uint64(len(p)-k) < n {
		return "", nil, false
	}
	return string(p[k : k+int(n)]), p[k+int(n):], true
}

// vecRecord is one put (vec != nil) or delete.
type vecRecord struct {
	id, agent string
	kind      Kind
	hash      uint64
	vec       []float32
}

// write appends records and makes them readable.
func (s *vectorStore) write(recs []vecRecord) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	var buf []byte
	for _, r := range recs {
		buf = buf[:0]
		if r.vec == nil {
			buf = append(buf, vecDelete)
			buf = appendString(buf, r.id)
		} else {
			buf = append(buf, vecPut)
			buf = appendString(buf, r.id)
			buf = appendString(buf, r.agent)
			buf = appendString(buf, string(r.kind))
			buf = binary.LittleEndian.AppendUint64(buf, r.hash)
			buf = binary.LittleEndian.AppendUint32(buf, uint32(len(r.vec)))
			for _, x := range r.vec {
				buf = binary.LittleEndian.AppendUint32(buf, math.Float32bits(x))
			}
		}
		var hdr [8]byte
		binary.LittleEndian.PutUint32(hdr[:4], uint32(len(buf)))
		binary.LittleEndian.PutUint32(hdr[4:], crc32.ChecksumIEEE(buf))
		if _, err := s.w.Write(hdr[:]); err != nil {
			return err
		}
		if _, err := s.w.Write(buf); err != nil {
			return err
		}
		if err := s.apply(buf, s.size+8); err != nil {
			return err
		}
		s.size += 8 + int64(len(buf))
	}
	return s.w.Flush()
}

func appendString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

// lookup returns id's vector if it was embedded from text with this hash.
func (s *vectorStore) lookup(id string, hash uint64) []float32 {
	s.mu.RLock()
	defer s.mu.RUnlock()
	e, ok := s.entries[id]
	if !ok || e.hash != hash {
		return nil
	}
	b, err := s.vectorBytes(e, nil)
	if err != nil {
		return nil
	}
	v := make([]float32, e.dims)
	for i := range v {
		v[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return v
}

// vectorBytes returns e's stored vector, from the mapping when there is one, else read into
// buf. The caller holds s.mu (read or write).
func (s *vectorStore) vectorBytes(e *vecEntry, buf []byte) ([]byte, error) {
	n := int64(4 * e.dims)
	if e.off+n <= int64(len(s.mm)) {
		return s.mm[e.off : e.off+n], nil
	}
	if int64(cap(buf)) < n {
		buf = make([]byte, n)
	}
	buf = buf[:n]
	_, err := s.f.ReadAt(buf, e.off)
	return buf, err
}

// remap maps the file again once it has outgrown the mapping, with room to grow. Searches
// then read vectors in place: no system call per vector.
func (s *vectorStore) remap() {
	if s.size <= int64(len(s.mm)) || s.mapFailed {
		return
	}
	if s.mm != nil {
		unmapFile(s.mm)
		s.mm = nil
	}
	mm, err := mapFile(s.f, max(2*s.size, 16<<20))
	if err != nil {
		s.mapFailed = true // reads fall back to ReadAt
		return
	}
	s.mm = mm
}

func (s *vectorStore) has(id string) bool {
	s.mu.RLock()
	defer s.mu.RUnlock()
	_, ok := s.entries[id]
	return ok
}

func (s *vectorStore) count() int {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return len(s.entries)
}

// vecHit is one vector-side result.
type vecHit struct {
	id  string
	sim float64
}

// search returns the n memories most similar to q (unit length) among those of the given
// agents (nil means all) and kinds (nil means all), best first. It holds the read lock for
// the scan, so an append waits for it (a few milliseconds per 10,000 vectors).
func (s *vectorStore) search(ctx context.Context, q []float32, agents []string, kinds map[Kind]bool, n int) ([]vecHit, error) {
	s.mu.RLock()
	if s.size > int64(len(s.mm)) && !s.mapFailed {
		s.mu.RUnlock()
		s.mu.Lock()
		s.remap()
		s.mu.Unlock()
		s.mu.RLock()
	}
	defer s.mu.RUnlock()
	top := &topHits{n: n}
	var buf []byte
	var err error
	seen := 0
	scan := func(m map[string]*vecEntry) {
		for id, e := range m {
			if e.dims != len(q) || (kinds != nil && !kinds[e.kind]) {
				continue
			}
			if seen++; seen%1024 == 0 && ctx.Err() != nil {
				err = ctx.Err()
				return
			}
			var b []byte
			if b, err = s.vectorBytes(e, buf); err != nil {
				return
			}
			buf = b
			top.push(vecHit{id: id, sim: dotBytes(q, b)})
		}
	}
	if agents == nil {
		scan(s.entries)
	}
	for _, a := range agents {
		if err == nil {
			scan(s.byAgent[a])
		}
	}
	if err != nil {
		return nil, err
	}
	return top.sorted(), nil
}

func (s *vectorStore) close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.mm != nil {
		unmapFile(s.mm)
		s.mm = nil
	}
	err := s.w.Flush()
	if serr := s.f.Sync(); err == nil {
		err = serr
	}
	if cerr := s.f.Close(); err == nil {
		err = cerr
	}
	return err
}

// dotBytes is the dot product of q and a stored little-endian vector of the same length.
// Four accumulators break the add dependency chain (about 4× faster than one).
func dotBytes(q []float32, b []byte) float64 {
	b = b[:4*len(q)]
	var s0, s1, s2, s3 float32
	i := 0
	for ; i+4 <= len(q); i += 4 {
		c := b[4*i : 4*i+16]
		s0 += q[i] * math.Float32frombits(binary.LittleEndian.Uint32(c[0:]))
		s1 += q[i+1] * math.Float32frombits(binary.LittleEndian.Uint32(c[4:]))
		s2 += q[i+2] * math.Float32frombits(binary.LittleEndian.Uint32(c[8:]))
		s3 += q[i+3] * math.Float32frombits(binary.LittleEndian.Uint32(c[12:]))
	}
	for ; i < len(q); i++ {
		s0 += q[i] * math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return float64(s0 + s1 + s2 + s3)
}

// topHits keeps the n best hits seen (a min-heap on similarity, worst at the root).
type topHits struct {
	n int
	h []vecHit
}

func worse(a, b vecHit) bool { return a.sim < b.sim || (a.sim == b.sim && a.id > b.id) }

func (t *topHits) push(x vecHit) {
	if len(t.h) < t.n {
		t.h = append(t.h, x)
		for i := len(t.h) - 1; i > 0; {
			p := (i - 1) / 2
			if !worse(t.h[i], t.h[p]) {
				break
			}
			t.h[i], t.h[p] = t.h[p], t.h[i]
			i = p
		}
		return
	}
	if t.n == 0 || !worse(t.h[0], x) {
		return
	}
	t.h[0] = x
	for i := 0; ; {
		l, m := 2*i+1, i
		if l < len(t.h) && worse(t.h[l], t.h[m]) {
			m = l
		}
		if l+1 < len(t.h) && worse(t.h[l+1], t.h[m]) {
			m = l + 1
		}
		if m == i {
			return
		}
		t.h[i], t.h[m] = t.h[m], t.h[i]
		i = m
	}
}

// sorted returns the kept hits, best first.
func (t *topHits) sorted() []vecHit {
	sort.Slice(t.h, func(i, j int) bool { return worse(t.h[j], t.h[i]) })
	return t.h
}

// normalize scales v to unit length in place; it reports false for a zero or non-finite vector.
func normalize(v []float32) bool {
	var ss float64
	for _, x := range v {
		ss += float64(x) * float64(x)
	}
	if ss == 0 || math.IsInf(ss, 0) || math.IsNaN(ss) {
		return false
	}
	inv := float32(1 / math.Sqrt(ss))
	for i := range v {
		v[i] *= inv
	}
	return true
}

func textHash(s string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(s))
	return h.Sum64()
}

// embedAll embeds texts in calls of at most embedChunk, checking what the embedder returns.
func embedAll(ctx context.Context, e Embedder, texts []string) ([][]float32, error) {
	out := make([][]float32, 0, len(texts))
	for start := 0; start < len(texts); start += embedChunk {
		end := min(start+embedChunk, len(texts))
		vecs, err := e.Embed(ctx, texts[start:end])
		if err != nil {
			return nil, err
		}
		if len(vecs) != end-start {
			return nil, fmt.Errorf("embedder returned %d vectors for %d texts", len(vecs), end-start)
		}
		for _, v := range vecs {
			if len(v) == 0 {
				return nil, errors.New("embedder returned an empty vector")
			}
			if len(out) > 0 && len(v) != len(out[0]) {
				return nil, fmt.Errorf("embedder returned vectors of %d and %d dimensions", len(v), len(out[0]))
			}
			if !normalize(v) {
				return nil, errors.New("embedder returned a zero or non-finite vector")
			}
			out = append(out, v)
		}
	}
	return out, nil
}

const embedChunk = 32
