package agent

import (
	"path/filepath"
	"testing"

	"github.com/rookhq/rook/cas"
	"github.com/rookhq/rook/internal/vfs"
)

// A fork left unlinked from a parent that is imported, but whose log does
// not read, is not said to be of a parent "not imported": show (and
// export-html) say so of it only when no session of that source id is in
// the store, as session ls, which reads metadata only, does.
func TestUnlinkedParentImportedButUnreadable(t *testing.T) {
	fsys := vfs.NewMem()
	r := testRook(t, fsys)
	dir := "/p/-home-u-proj"
	// Files that say each was forked from the other: the one imported
	// first stays unlinked, its parent imported all the same.
	aPath, bPath := dir+"/A.jsonl", dir+"/B.jsonl"
	writeSource(t, fsys, aPath, append(claudeForkLines("B", "A", 1), claudeLines("A", 2)...), "")
	aid := *fileByPath(t, mustImport(t, r, FormatClaudeCode, aPath), aPath).Session
	writeSource(t, fsys, bPath, append(claudeForkLines("A", "B", 1), claudeLines("B", 2)...), "")
	b := fileByPath(t, mustImport(t, r, FormatClaudeCode, bPath), bPath)
	if b.Session == nil || b.Parent == nil || *b.Parent != aid {
		t.Fatalf("B: %+v", b)
	}
	check := func(when string) {
		t.Helper()
		p, err := r.Show(aid, ShowQuery{Limit: 10})
		if err != nil {
			t.Fatal(err)
		}
		if u := p.Unlinked; u == nil || u.SourceID != "B" || !u.Imported {
			t.Fatalf("%s: show: unlinked %+v, want parent B, imported", when, u)
		}
		x, err := r.ExportRange(aid, 0, nil)
		if err != nil {
			t.Fatal(err)
		}
		if u := x.Unlinked; u == nil || !u.Imported {
			t.Fatalf("%s: export: unlinked %+v, want imported", when, u)
		}
	}
	check("B reads")
	// B's log damaged: B is in the store all the same (session ls, which
	// reads metadata only, says so): not a parent "not imported".
	if err := fsys.WriteFileAtomic(filepath.Join(testHome, cas.EventsDir, b.Session.String()+".log"), []byte("not a log"), 0o600); err != nil {
		t.Fatal(err)
	}
	check("B's log damaged")
}
