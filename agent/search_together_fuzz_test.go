package agent

import (
	"bytes"
	"strings"
	"testing"
)

// FuzzTermsTogether: termsTogether never panics on any line and query;
// when it says the terms stand together, each is on the line; a query's
// terms written one after another, a blank between them, stand together;
// and so do they in the query itself, with what it has between them (a
// query that says no term twice).
func FuzzTermsTogether(f *testing.F) {
	f.Add("mix test", "run mix test --seed 0")
	f.Add("fix the parser", "please fix the parser now")
	f.Add("c++ code", "c++ code")
	f.Add("fix parser", "fix the theparser")
	f.Add("İstanbul test", "İSTANBUL the test")
	f.Add("can't connect", "Error: can't  connect")
	f.Add("create a branch", "create it again, a branch")
	f.Add("foo.bar(baz) x, y: z ok", "foo.bar(baz) ok")
	f.Add("00\r01", "0")
	f.Fuzz(func(t *testing.T, query, line string) {
		words, between := searchTermsOf(query)
		terms, gaps := termBytes(words, between)
		if len(terms) < 2 {
			return
		}
		low := appendFold(nil, []byte(line))
		if termsTogether(low, terms, gaps) {
			for _, term := range terms {
				if !bytes.Contains(low, term) {
					t.Fatalf("together in %q, but %q is not on it", low, term)
				}
			}
		}
		joined := appendFold(nil, []byte(strings.Join(words, " ")))
		if !termsTogether(joined, terms, gaps) {
			t.Fatalf("terms %q are not together in %q", words, joined)
		}
		if between != nil {
			// Its blanks as a line's (a space or a tab: a newline or a
			// carriage return is none).
			if q := appendFold(nil, []byte(blanksAsOne(query))); !termsTogether(q, terms, gaps) {
				t.Fatalf("terms %q (gaps %q) are not together in the query %q", words, between, q)
			}
		}
	})
}
