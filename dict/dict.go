// Package dict holds the zstd dictionaries rook compresses with, each named
// by a stable numeric id that every compressed segment record carries, so
// decoding never has to try several.
//
// Id 0 means "no dictionary". Training and generations arrive with issue 5;
// until then a store holds no dictionaries and Set.Lookup refuses every
// non-zero id with an error that names it.
package dict

import "fmt"

// None is the dictionary id of records compressed without a dictionary.
const None uint32 = 0

// Set resolves dictionary ids to dictionary bytes.
type Set interface {
	Lookup(id uint32) ([]byte, error)
}

// Empty is the set of a store that has no dictionaries.
type Empty struct{}

// Lookup always fails: an empty set holds no dictionary.
func (Empty) Lookup(id uint32) ([]byte, error) {
	return nil, fmt.Errorf("dictionary %d is not in this store (it may have been written by a newer rook)", id)
}
