package index

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"

	"github.com/rookhq/rook/internal/vfs"
)

// KeySize is the length of a key: a 128-bit object id.
const KeySize = 16

// Key is an object id.
type Key = [KeySize]byte

const (
	// MaxValue is the largest value Put accepts.
	MaxValue = 1024
	// MaxUserMeta is the largest user meta blob Commit and Rebuild accept.
	MaxUserMeta = 2048
	// FormatVersion is the meta slot format version this package writes and
	// the newest it reads.
	FormatVersion = 2
)

const (
	nodeVersion = 2
	typeLeaf    = 1
	typeBranch  = 2

	slotSize      = 4096         // each meta slot owns one page
	dataStart     = 2 * slotSize // first node offset
	metaHeaderLen = 68           // fixed part of a meta slot
	metaCRCOff    = 12           // offset of the crc field inside a slot

	nodeHeaderLen = 8                     // crc32c + body length
	nodeOverhead  = nodeHeaderLen + 2 + 3 // header, version, type, count (uvarint, at most 3 bytes here)
	nodeTarget    = 4096                  // a node is split when its encoding would exceed this
	minFill       = nodeTarget / 4        // nodes rewritten smaller than this are merged with a sibling
	maxNodeLen    = 64 << 10              // sanity limit for references read from disk
	minNodeLen    = nodeHeaderLen + 3 + KeySize + 1
	maxHeight     = 32 // sanity limit; a tree of 4 KiB nodes never gets near it
	minLeafEntry  = KeySize + 1
	minBranchEnt  = KeySize + 2 + 1
)

var (
	// ErrCorrupt reports that the index file is damaged. Errors returned by
	// this package wrap it with detail, so test with errors.Is.
	ErrCorrupt = errors.New("index: corrupt")
	// ErrNewerFormat reports an index file written by a newer rook.
	ErrNewerFormat = errors.New("index: file was written by a newer rook (unsupported format version); upgrade rook")
	// ErrClosed is returned by operations on a closed Tree.
	ErrClosed = errors.New("index: tree is closed")
	// ErrReadOnly is returned by write operations on a Tree opened read-only.
	ErrReadOnly = errors.New("index: tree is read-only")
)

var (
	magic      = [8]byte{'r', 'o', 'o', 'k', 'i', 'd', 'x', '1'}
	castagnoli = crc32.MakeTable(crc32.Castagnoli)
)

// Ref locates a node: it occupies bytes [Off, Off+Len) of the index file.
type Ref struct {
	Off uint64
	Len uint32
}

func (r Ref) end() uint64 { return r.Off + uint64(r.Len) }

// ---------------------------------------------------------------------------
// Meta slots.

// Meta is the decoded content of a meta slot: one committed state of the tree.
type Meta struct {
	Version   uint16
	TxID      uint64
	Root      Ref    // zero when Height == 0
	Height    uint32 // 0 = empty tree, 1 = the root is a leaf
	Entries   uint64
	FileEnd   uint64 // bytes at or beyond FileEnd are not part of this state
	LiveBytes uint64 // total length of the nodes reachable from Root
	UserMeta  []byte
}

// Encode returns the slot encoding of m (metaHeaderLen+len(UserMeta) bytes),
// with the checksum filled in. Version 0 is written as FormatVersion.
func (m Meta) Encode() []byte {
	b := make([]byte, metaHeaderLen+len(m.UserMeta))
	copy(b[0:8], magic[:])
	v := m.Version
	if v == 0 {
		v = FormatVersion
	}
	le := binary.LittleEndian
	le.PutUint16(b[8:], v)
	le.PutUint16(b[10:], 0)
	le.PutUint32(b[12:], 0)
	le.PutUint64(b[16:], m.TxID)
	le.PutUint64(b[24:], m.Root.Off)
	le.PutUint32(b[32:], m.Root.Len)
	le.PutUint32(b[36:], m.Height)
	le.PutUint64(b[40:], m.Entries)
	le.PutUint64(b[48:], m.FileEnd)
	le.PutUint64(b[56:], m.LiveBytes)
	le.PutUint32(b[64:], uint32(len(m.UserMeta)))
	copy(b[metaHeaderLen:], m.UserMeta)
	le.PutUint32(b[metaCRCOff:], crc32.Checksum(b, castagnoli))
	return b
}

// DecodeMeta decodes a meta slot. b may be longer than the encoding (a whole
// slot page); bytes after the encoding are ignored. It checks the magic, the
// version (ErrNewerFormat if newer than FormatVersion), the checksum and the
// internal consistency of the fields; it cannot check them against the file
// (Open does that). Other failures wrap ErrCorrupt. It never panics.
func DecodeMeta(b []byte) (Meta, error) {
	if len(b) < metaHeaderLen {
		return Meta{}, fmt.Errorf("%w: meta slot: short (%d bytes)", ErrCorrupt, len(b))
	}
	if !bytes.Equal(b[0:8], magic[:]) {
		return Meta{}, fmt.Errorf("%w: meta slot: bad magic %q", ErrCorrupt, b[0:8])
	}
	le := binary.LittleEndian
	m := Meta{Version: le.Uint16(b[8:])}
	if m.Version > FormatVersion {
		return Meta{}, fmt.Errorf("%w (file format version %d, this rook reads up to %d)", ErrNewerFormat, m.Version, FormatVersion)
	}
	if m.Version < FormatVersion {
		// Version 1 (32-byte keys) was never released; such a file is
		// rebuilt from the segments like a damaged one.
		return Meta{}, fmt.Errorf("%w: meta slot: format version %d, older than this rook's %d (rebuild it: rook store reindex)", ErrCorrupt, m.Version, FormatVersion)
	}
	umLen := le.Uint32(b[64:])
	if umLen > MaxUserMeta {
		return Meta{}, fmt.Errorf("%w: meta slot: user meta length %d > %d", ErrCorrupt, umLen, MaxUserMeta)
	}
	n := metaHeaderLen + int(umLen)
	if len(b) < n {
		return Meta{}, fmt.Errorf("%w: meta slot: short (%d bytes, need %d)", ErrCorrupt, len(b), n)
	}
	if slotCRC(b[:n]) != le.Uint32(b[metaCRCOff:]) {
		return Meta{}, fmt.Errorf("%w: meta slot: checksum mismatch", ErrCorrupt)
	}
	if r := le.Uint16(b[10:]); r != 0 {
		return Meta{}, fmt.Errorf("%w: meta slot: reserved field is %#x, want 0", ErrCorrupt, r)
	}
	m.TxID = le.Uint64(b[16:])
	m.Root = Ref{Off: le.Uint64(b[24:]), Len: le.Uint32(b[32:])}
	m.Height = le.Uint32(b[36:])
	m.Entries = le.Uint64(b[40:])
	m.FileEnd = le.Uint64(b[48:])
	m.LiveBytes = le.Uint64(b[56:])
	m.UserMeta = bytes.Clone(b[metaHeaderLen:n])
	if m.UserMeta == nil {
		m.UserMeta = []byte{}
	}
	if err := m.sane(); err != nil {
		return Meta{}, fmt.Errorf("%w: meta slot: %v", ErrCorrupt, err)
	}
	return m, nil
}

// sane checks the fields against each other.
func (m *Meta) sane() error {
	if m.FileEnd < dataStart || m.FileEnd > 1<<62 {
		return fmt.Errorf("file end %d out of range", m.FileEnd)
	}
	if m.LiveBytes > m.FileEnd-dataStart {
		return fmt.Errorf("live bytes %d exceed node area %d", m.LiveBytes, m.FileEnd-dataStart)
	}
	if m.Height == 0 {
		if m.Root != (Ref{}) || m.Entries != 0 || m.LiveBytes != 0 {
			return errors.New("empty tree with a root, entries or live bytes")
		}
		return nil
	}
	if m.Height > maxHeight {
		return fmt.Errorf("height %d > %d", m.Height, maxHeight)
	}
	if err := m.checkRef(m.Root); err != nil {
		return fmt.Errorf("root: %v", err)
	}
	if m.Entries == 0 {
		return errors.New("non-empty tree with 0 entries")
	}
	if m.LiveBytes < uint64(m.Root.Len) {
		return fmt.Errorf("live bytes %d < root length %d", m.LiveBytes, m.Root.Len)
	}
	return nil
}

// checkRef reports whether r can be a node of the state m describes.
func (m *Meta) checkRef(r Ref) error {
	if r.Off < dataStart || r.Len < minNodeLen || r.Len > maxNodeLen || r.Off > m.FileEnd || uint64(r.Len) > m.FileEnd-r.Off {
		return fmt.Errorf("reference (offset %d, length %d) outside node area [%d, %d)", r.Off, r.Len, dataStart, m.FileEnd)
	}
	return nil
}

// ---------------------------------------------------------------------------
// Nodes.

// entry is one node entry while building nodes: val for leaves, ref for
// branches.
type entry struct {
	key Key
	val []byte
	ref Ref
}

func uvarintLen(x uint64) int {
	n := 1
	for x >= 0x80 {
		x >>= 7
		n++
	}
	return n
}

func entrySize(leaf bool, e *entry) int {
	if leaf {
		return KeySize + uvarintLen(uint64(len(e.val))) + len(e.val)
	}
	return KeySize + uvarintLen(e.ref.Off) + uvarintLen(uint64(e.ref.Len))
}

// appendNode appends the encoding of a node holding ents to dst.
func appendNode(dst []byte, leaf bool, ents []entry) []byte {
	start := len(dst)
	dst = append(dst, 0, 0, 0, 0, 0, 0, 0, 0, nodeVersion, typeBranch)
	if leaf {
		dst[len(dst)-1] = typeLeaf
	}
	dst = binary.AppendUvarint(dst, uint64(len(ents)))
	for i := range ents {
		e := &ents[i]
		dst = append(dst, e.key[:]...)
		if leaf {
			dst = binary.AppendUvarint(dst, uint64(len(e.val)))
			dst = append(dst, e.val...)
		} else {
			dst = binary.AppendUvarint(dst, e.ref.Off)
			dst = binary.AppendUvarint(dst, uint64(e.ref.Len))
		}
	}
	le := binary.LittleEndian
	le.PutUint32(dst[start+4:], uint32(len(dst)-start-nodeHeaderLen))
	le.PutUint32(dst[start:], crc32.Checksum(dst[start+4:], castagnoli))
	return dst
}

// readUvarint decodes a canonical (minimal) uvarint; n <= 0 on error.
func readUvarint(b []byte) (uint64, int) {
	x, n := binary.Uvarint(b)
	if n <= 0 {
		return 0, -1
	}
	if n > 1 && b[n-1] == 0 {
		return 0, -1 // non-minimal encoding
	}
	return x, n
}

// node is the decoded, immutable in-memory form of a node. It keeps the
// encoded bytes and indexes into them, which is about as small as a decoded
// node can be (the cache holds many).
type node struct {
	leaf bool
	data []byte   // the whole encoding, header included
	pos  []uint32 // leaf: key offset, value offset per entry; branch: key offset per entry
	pfx  []uint64 // first 8 bytes of each key, big-endian: binary search mostly stays in this array
	refs []Ref    // branch children
}

func (n *node) count() int {
	if n.leaf {
		return len(n.pos) / 2
	}
	return len(n.pos)
}

func (n *node) keyBytes(i int) []byte {
	var o uint32
	if n.leaf {
		o = n.pos[2*i]
	} else {
		o = n.pos[i]
	}
	return n.data[o : o+KeySize : o+KeySize]
}

func (n *node) key(i int) Key { return Key(n.keyBytes(i)) }

func (n *node) value(i int) []byte {
	start := n.pos[2*i+1]
	end := uint32(len(n.data))
	if 2*i+2 < len(n.pos) {
		end = n.pos[2*i+2]
	}
	return n.data[start:end:end]
}

// cmp compares key i with k (whose first 8 bytes, big-endian, are kp).
func (n *node) cmp(i int, k *Key, kp uint64) int {
	switch p := n.pfx[i]; {
	case p < kp:
		return -1
	case p > kp:
		return 1
	}
	return bytes.Compare(n.keyBytes(i)[8:], k[8:])
}

// lowerBound returns the first index whose key is >= k.
func (n *node) lowerBound(k *Key) int {
	kp := binary.BigEndian.Uint64(k[:8])
	lo, hi := 0, len(n.pfx)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if n.cmp(m, k, kp) < 0 {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo
}

// childFor returns the index of the last key <= k, or -1 if k is smaller than
// every key.
func (n *node) childFor(k *Key) int {
	kp := binary.BigEndian.Uint64(k[:8])
	lo, hi := 0, len(n.pfx)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if n.cmp(m, k, kp) <= 0 {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo - 1
}

func (n *node) entries() []entry {
	ents := make([]entry, n.count())
	for i := range ents {
		ents[i].key = n.key(i)
		if n.leaf {
			ents[i].val = n.value(i)
		} else {
			ents[i].ref = n.refs[i]
		}
	}
	return ents
}

// memSize estimates the memory a cached node holds.
func (n *node) memSize() int64 {
	return int64(len(n.data) + 4*len(n.pos) + 8*len(n.pfx) + 16*len(n.refs) + 160)
}

// decodeNode validates and decodes one encoded node. It keeps b. Errors are
// bare descriptions; callers wrap them with ErrCorrupt and the offset.
func decodeNode(b []byte) (*node, error) {
	if len(b) < nodeHeaderLen+3 {
		return nil, fmt.Errorf("short node (%d bytes)", len(b))
	}
	le := binary.LittleEndian
	if bodyLen := le.Uint32(b[4:]); uint64(bodyLen) != uint64(len(b)-nodeHeaderLen) {
		return nil, fmt.Errorf("body length %d does not match node length %d", bodyLen, len(b))
	}
	if crc := crc32.Checksum(b[4:], castagnoli); crc != le.Uint32(b) {
		return nil, errors.New("checksum mismatch")
	}
	if b[8] != nodeVersion {
		return nil, fmt.Errorf("unknown node version %d", b[8])
	}
	n := &node{}
	switch b[9] {
	case typeLeaf:
		n.leaf = true
	case typeBranch:
	default:
		return nil, fmt.Errorf("unknown node type %d", b[9])
	}
	p := 10
	count, k := readUvarint(b[p:])
	if k <= 0 {
		return nil, errors.New("bad entry count")
	}
	p += k
	minEnt := minBranchEnt
	if n.leaf {
		minEnt = minLeafEntry
	}
	if count == 0 || count > uint64((len(b)-p)/minEnt) {
		return nil, fmt.Errorf("entry count %d impossible for a %d-byte node", count, len(b))
	}
	n.pfx = make([]uint64, 0, count)
	if n.leaf {
		n.pos = make([]uint32, 0, 2*count)
	} else {
		n.pos = make([]uint32, 0, count)
		n.refs = make([]Ref, 0, count)
	}
	var prev []byte
	for i := uint64(0); i < count; i++ {
		if len(b)-p < KeySize {
			return nil, fmt.Errorf("entry %d: truncated key", i)
		}
		key := b[p : p+KeySize]
		if prev != nil && bytes.Compare(prev, key) >= 0 {
			return nil, fmt.Errorf("entry %d: keys not strictly ascending", i)
		}
		prev = key
		n.pos = append(n.pos, uint32(p))
		n.pfx = append(n.pfx, binary.BigEndian.Uint64(key))
		p += KeySize
		if n.leaf {
			vlen, k := readUvarint(b[p:])
			if k <= 0 {
				return nil, fmt.Errorf("entry %d: bad value length", i)
			}
			p += k
			if vlen > MaxValue || vlen > uint64(len(b)-p) {
				return nil, fmt.Errorf("entry %d: value length %d out of range", i, vlen)
			}
			n.pos = append(n.pos, uint32(p))
			p += int(vlen)
		} else {
			off, k := readUvarint(b[p:])
			if k <= 0 {
				return nil, fmt.Errorf("entry %d: bad child offset", i)
			}
			p += k
			l, k := readUvarint(b[p:])
			if k <= 0 {
				return nil, fmt.Errorf("entry %d: bad child length", i)
			}
			p += k
			if off < dataStart || off > 1<<62 || l < minNodeLen || l > maxNodeLen {
				return nil, fmt.Errorf("entry %d: child (offset %d, length %d) out of range", i, off, l)
			}
			n.refs = append(n.refs, Ref{Off: off, Len: uint32(l)})
		}
	}
	if p != len(b) {
		return nil, fmt.Errorf("%d trailing bytes after %d entries", len(b)-p, count)
	}
	n.data = b
	return n, nil
}

// Node is the exported, decoded form of one node, for tools and fuzzing.
type Node struct {
	Leaf     bool
	Keys     []Key
	Values   [][]byte // leaf nodes: Values[i] belongs to Keys[i]
	Children []Ref    // branch nodes: Keys[i] is the smallest key under Children[i]
}

// DecodeNode decodes and validates one encoded node (exactly the bytes a Ref
// covers): checksum, lengths, canonical varints, strictly ascending keys,
// value and child ranges. Failures wrap ErrCorrupt. It never panics, and
// successful decodes round-trip: AppendEncode reproduces b exactly.
func DecodeNode(b []byte) (Node, error) {
	n, err := decodeNode(bytes.Clone(b))
	if err != nil {
		return Node{}, fmt.Errorf("%w: %v", ErrCorrupt, err)
	}
	out := Node{Leaf: n.leaf, Keys: make([]Key, n.count())}
	for i := range out.Keys {
		out.Keys[i] = n.key(i)
	}
	if n.leaf {
		out.Values = make([][]byte, n.count())
		for i := range out.Values {
			out.Values[i] = n.value(i)
		}
	} else {
		out.Children = n.refs
	}
	return out, nil
}

// AppendEncode appends the encoding of n to dst. It panics if Values (leaf)
// or Children (branch) does not have one element per key.
func (n Node) AppendEncode(dst []byte) []byte {
	if (n.Leaf && len(n.Values) != len(n.Keys)) || (!n.Leaf && len(n.Children) != len(n.Keys)) {
		panic("index: Node.AppendEncode: keys and values/children differ in length")
	}
	ents := make([]entry, len(n.Keys))
	for i := range ents {
		ents[i].key = n.Keys[i]
		if n.Leaf {
			ents[i].val = n.Values[i]
		} else {
			ents[i].ref = n.Children[i]
		}
	}
	return appendNode(dst, n.Leaf, ents)
}

// SlotVersions are the format versions the meta slots of the index file
// at path declare, of those whose magic and checksum are right, whatever
// version they are: read only to tell which rook wrote the file (a store
// whose format marker is damaged). Nil when the file does not read.
func SlotVersions(fsys vfs.FS, path string) []uint16 {
	f, err := fsys.OpenFile(path, os.O_RDONLY, 0)
	if err != nil {
		return nil
	}
	defer f.Close()
	var vs []uint16
	for i := range 2 {
		page := make([]byte, slotSize)
		n, err := f.ReadAt(page, int64(i*slotSize))
		if err != nil && err != io.EOF {
			return vs
		}
		if v, ok := slotVersion(page[:n]); ok {
			vs = append(vs, v)
		}
	}
	return vs
}

// slotVersion is the format version a meta slot declares (b: its page),
// and false when its magic or checksum is wrong.
func slotVersion(b []byte) (uint16, bool) {
	if len(b) < metaHeaderLen || !bytes.Equal(b[0:8], magic[:]) {
		return 0, false
	}
	le := binary.LittleEndian
	n := metaHeaderLen + int(le.Uint32(b[64:]))
	if n > len(b) || n > slotSize {
		return 0, false
	}
	if slotCRC(b[:n]) != le.Uint32(b[metaCRCOff:]) {
		return 0, false
	}
	return le.Uint16(b[8:]), true
}

// slotCRC is the checksum of a meta slot's encoding enc: its bytes with
// the crc field as zeros.
func slotCRC(enc []byte) uint32 {
	crc := crc32.Update(0, castagnoli, enc[:metaCRCOff])
	crc = crc32.Update(crc, castagnoli, []byte{0, 0, 0, 0})
	return crc32.Update(crc, castagnoli, enc[metaCRCOff+4:])
}
