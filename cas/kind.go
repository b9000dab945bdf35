package cas

import (
	"fmt"
	"strings"
)

// Kind says what an object is. It drives compression (objects of one kind
// are packed and compressed together, with that kind's dictionary) and shows
// in listings.
//
// The numeric codes are part of the on-disk format (segment record headers
// and index entries carry them): never renumber or reuse one. A retired kind
// keeps its number as a comment.
type Kind uint8

const (
	KindMessage    Kind = 1
	KindToolResult Kind = 2
	KindFile       Kind = 3
	KindSkill      Kind = 4
	KindMemory     Kind = 5
	KindSnapshot   Kind = 6
	KindDocs       Kind = 7
	KindNote       Kind = 8
	// KindSource is one line of an imported transcript, its large strings
	// cut out into objects of their own (agent/sourceline.go).
	KindSource Kind = 9
	KindOther  Kind = 255
)

// Kinds lists every kind in display order.
var Kinds = []Kind{KindMessage, KindToolResult, KindFile, KindSkill, KindMemory, KindSnapshot, KindDocs, KindNote, KindSource, KindOther}

var kindNames = map[Kind]string{
	KindMessage:    "message",
	KindToolResult: "tool-result",
	KindFile:       "file",
	KindSkill:      "skill",
	KindMemory:     "memory",
	KindSnapshot:   "snapshot",
	KindDocs:       "docs",
	KindNote:       "note",
	KindSource:     "source",
	KindOther:      "other",
}

// String returns the kind's name, or "kind(N)" for a code this build does
// not know (a newer rook wrote it).
func (k Kind) String() string {
	if n, ok := kindNames[k]; ok {
		return n
	}
	return fmt.Sprintf("kind(%d)", uint8(k))
}

// Encoded reports whether rook writes the objects of kind k in an
// encoding of its own, which readers decode by the kind: a snapshot's
// manifest, an imported line's source object. Bytes stored by hand under
// such a kind would be taken for that encoding, and a later Put of the
// same bytes (a message) would dedup to it, so `rook store put` does not
// take these kinds.
func (k Kind) Encoded() bool { return k == KindSnapshot || k == KindSource }

// Valid reports whether k is a kind this build knows.
func (k Kind) Valid() bool {
	_, ok := kindNames[k]
	return ok
}

// ParseKind reads a kind name as users type it ("tool_result" is accepted
// for "tool-result").
func ParseKind(s string) (Kind, error) {
	s = strings.ReplaceAll(strings.ToLower(strings.TrimSpace(s)), "_", "-")
	for k, n := range kindNames {
		if n == s {
			return k, nil
		}
	}
	names := make([]string, 0, len(Kinds))
	for _, k := range Kinds {
		names = append(names, k.String())
	}
	return 0, fmt.Errorf("unknown kind %q: use one of %s", s, strings.Join(names, ", "))
}
