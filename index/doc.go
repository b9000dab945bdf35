// Package index is rook's object index: an append-only, copy-on-write B+tree
// in a single file, mapping 16-byte (128-bit) object ids to small opaque values (at
// most MaxValue bytes), plus an opaque "user meta" blob (at most MaxUserMeta
// bytes) committed atomically with the tree.
//
// # File layout
//
// All integers are little-endian. A file is two meta slots followed by
// nodes:
//
//	 offset 0      4096      8192                                  file end
//	+---------+---------+--------+--------+-- ... --+--------+-------------+
//	| meta    | meta    | node   | node   |         | node   | uncommitted |
//	| slot 0  | slot 1  |        |        |         |        | garbage     |
//	+---------+---------+--------+--------+-- ... --+--------+-------------+
//	 one 4 KiB page each |<-- appended, never overwritten -->|
//
// Each meta slot lives in its own 4 KiB page so that a torn write can damage
// at most one of them. Meta slots are the only bytes ever rewritten; nodes
// are only appended. A commit with txid T writes slot T%2, so the previous
// commit's slot is left alone while the new one is written.
//
// # Meta slot
//
//	+--------------------+ 0
//	| magic "rookidx1"   |  [8]byte
//	+--------------------+ 8
//	| format version = 2 |  u16   newer: ErrNewerFormat; older (1): read as damage
//	| reserved = 0       |  u16
//	| crc32c             |  u32   see below
//	+--------------------+ 16
//	| txid               |  u64   commit counter; the valid slot with the higher txid wins
//	| root offset        |  u64   \ reference to the root node
//	| root length        |  u32   / (both 0 for an empty tree)
//	| height             |  u32   0 = empty tree, 1 = root is a leaf, ...
//	| entry count        |  u64
//	| committed file end |  u64   bytes at or beyond it belong to no commit
//	| live node bytes    |  u64   total length of the nodes reachable from root
//	| user meta length   |  u32   <= MaxUserMeta
//	+--------------------+ 68
//	| user meta          |  [user meta length]byte
//	+--------------------+ 68 + user meta length
//	| zero padding       |  to the end of the 4 KiB page (not checksummed)
//	+--------------------+ 4096
//
// The crc32c (Castagnoli) covers the slot's encoding, bytes [0, 68+user meta
// length), computed with the crc field itself set to zero. A slot is valid
// when magic, version, reserved field and checksum are right and its fields
// are consistent: txid%2 is the slot number, the root lies inside
// [8192, file end), the file end does not exceed the file size, live bytes
// fit below the file end, and an empty tree has no root, entries or live
// bytes. An all-zero slot has simply never been written (a new file only has
// slot 0).
//
// # Node
//
// A node is referenced by (offset, length), so it is read with a single
// ReadAt:
//
//	+---------+----------+---------------------------------------------+
//	| crc32c  | body len | body                                        |
//	| u32     | u32 = N  | [N]byte                                     |
//	+---------+----------+---------------------------------------------+
//	          |<------------ covered by the crc32c ------------------->|
//
//	body:   version u8 (=2) | type u8 (1 leaf, 2 branch) | count uvarint | entries
//	leaf entry:   key [16]byte | value length uvarint | value [length]byte
//	branch entry: key [16]byte | child offset uvarint | child length uvarint
//
// Keys are strictly ascending within a node and, in key order, across
// leaves. A branch entry's key is the smallest key in that child's subtree
// (its first key). Every node holds at least one entry. Uvarints must be
// minimal, so a node has exactly one encoding. Nodes are at most 4 KiB: a
// node that would grow beyond that is split (evenly, by commits; packed full
// by bulk loads), and a node that a commit leaves below 1 KiB is merged with
// a sibling.
//
// Every writer appends a node's children before the node itself (a commit
// writes bottom-up, a bulk load closes a node before its parent, and an
// unchanged child is older still), so a child always ends at or before its
// parent's offset. Readers insist on it: a reference at or after its parent
// is damage, which rules out cycles.
//
// # Transactions
//
// Put and Delete buffer changes in memory. Commit applies them copy-on-write:
// every leaf that changes, and every branch above it up to a new root, is
// written as a new node appended at the committed file end. Then:
//
//	(1) write the new nodes  (2) fsync  (3) write meta slot (txid+1)%2  (4) fsync
//
// The old nodes stay where they were, so a Snapshot of an earlier state
// keeps reading them, and so does a reader in another process that has not
// refreshed. Bytes that are no longer reachable are garbage; when the file
// end exceeds 2 × live bytes + 1 MiB, Commit compacts the index by
// rebuilding it (below).
//
// # Rebuild and compaction
//
// Rebuild (and compaction, which rebuilds from the committed tree) bulk-loads
// a fresh file path+".tmp" with packed nodes, writes its meta slot, fsyncs
// it, renames it over path and fsyncs the directory. Readers holding the old
// file keep reading it (rename leaves their descriptor valid); read-only
// Trees pick up the new file on Refresh.
//
// # Crash behaviour
//
// A crash (or power cut) at any point leaves, after reopening, either the
// state of the last Commit that returned nil or that of the Commit in flight
// (if its meta slot reached the disk), never a mix:
//
//   - Before (3) nothing refers to the new nodes; they lie beyond the
//     committed file end and a writable Open truncates them away.
//   - A torn meta-slot write in (3) fails that slot's checksum, so Open
//     uses the other slot: the previous commit, whose nodes are intact
//     because nodes are never overwritten.
//   - Nodes are synced in (2) before the meta that refers to them is
//     written, so a valid meta never points at missing nodes.
//   - A crash during Rebuild or compaction leaves either the old file under
//     path (plus a stale path+".tmp", which a writable Open removes) or the
//     complete new one.
//
// When Open has to fall back from an invalid slot, Stats().Recovered says
// which slot was rejected and why. If neither slot is valid Open returns an
// error wrapping ErrCorrupt. A slot with the right magic but a format
// version newer than FormatVersion makes Open fail with ErrNewerFormat
// instead of falling back: falling back (and truncating) could destroy data
// a newer rook wrote. Any node whose bytes are damaged fails its
// checksum when read, so Get and Ascend return ErrCorrupt rather than wrong
// data. Nor can damage that keeps every checksum right (deliberate, or a
// coincidence) make a walk endless or exponential: Get and Ascend reject a
// child that does not lie before its parent, and Ascend a key that does not
// follow the one before it, which a node reached twice (the shared child of
// a damaged tree) always repeats; Check walks each node at most once and
// reports one reached again. Each failure names the node's offset. Check
// verifies the whole file: both meta slots and their padding,
// every node ever appended (garbage of earlier commits included, so damage
// anywhere is found) and the structure of the committed tree. A writable
// Open that had to pass over a damaged slot rewrites it at once (an empty
// commit), so the file is whole again.
//
// # Concurrency
//
// One goroutine writes (Put, Delete, Commit, Rebuild); any number of
// goroutines read through Snapshots, which are immutable views of one
// committed state. Decoded nodes are cached by (file, offset) in a bounded
// cache (DefaultCacheBytes); nodes never change once written, so the cache
// needs no invalidation.
package index
