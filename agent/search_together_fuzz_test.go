package agent

import (
	"bytes"
	"strings"
	"testing"
)

// FuzzTermsTogether: termsTogether never panics on any line and query;
// when it says the terms stand together, each is on the line; and a
// query's terms written one after another, a blank between them, stand
// together.
func FuzzTermsTogether(f *testing.F) {
	f.Add("mix test", "run mix test --seed 0")
	f.Add("fix the parser", "please fix the parser now")
	f.Add("c++ code", "c++ code")
	f.Add("fix parser", "fix the theparser")
	f.Add("İstanbul test", "İSTANBUL the test")
	f.Fuzz(func(t *testing.T, query, line string) {
		var terms [][]byte
		for _, w := range SearchTerms(query) {
			terms = append(terms, []byte(w))
		}
		if len(terms) < 2 {
			return
		}
		low := appendLower(nil, []byte(line))
		if termsTogether(low, terms) {
			for _, term := range terms {
				if !bytes.Contains(low, term) {
					t.Fatalf("together in %q, but %q is not on it", low, term)
				}
			}
		}
		words := make([]string, len(terms))
		for i, term := range terms {
			words[i] = string(term)
		}
		joined := appendLower(nil, []byte(strings.Join(words, " ")))
		if !termsTogether(joined, terms) {
			t.Fatalf("terms %q are not together in %q", words, joined)
		}
	})
}
