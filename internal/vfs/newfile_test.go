package vfs

import (
	"errors"
	"io"
	"io/fs"
	"path/filepath"
	"testing"
)

// A file written New that someone else makes while it is written (the
// agent writing its transcript again, between export's look and its
// rename) is left as they made it: the write fails with fs.ErrExist, and
// leaves no temporary file. It was replaced. Without the race, it is made.
func TestWriteFilesAtomicNewDoesNotReplace(t *testing.T) {
	for _, tc := range []struct {
		name string
		fsys FS
		dir  string
	}{{"os", OS, t.TempDir()}, {"mem", NewMem(), "/d"}} {
		t.Run(tc.name, func(t *testing.T) {
			fsys, dir := tc.fsys, tc.dir
			if err := fsys.MkdirAll(dir, 0o700); err != nil {
				t.Fatal(err)
			}
			target := filepath.Join(dir, "t.jsonl")
			err := fsys.WriteFilesAtomic(dir, []NamedData{{Name: "t.jsonl", New: true, Stream: func(w io.Writer) error {
				if err := fsys.WriteFileAtomic(target, []byte("theirs\n"), 0o600); err != nil {
					return err
				}
				_, err := w.Write([]byte("ours\n"))
				return err
			}}}, 0o600)
			if !errors.Is(err, fs.ErrExist) {
				t.Fatalf("err %v; want one that is fs.ErrExist", err)
			}
			if b, err := ReadFile(fsys, target); err != nil || string(b) != "theirs\n" {
				t.Fatalf("the file made meanwhile holds %q (%v)", b, err)
			}
			if ents, _ := fsys.ReadDir(dir); len(ents) != 1 {
				t.Fatalf("left in the directory: %v", ents)
			}
			other := filepath.Join(dir, "o.jsonl")
			if err := fsys.WriteFilesAtomic(dir, []NamedData{{Name: "o.jsonl", New: true, Data: []byte("ours\n")}}, 0o600); err != nil {
				t.Fatal(err)
			}
			if b, err := ReadFile(fsys, other); err != nil || string(b) != "ours\n" {
				t.Fatalf("made: %q (%v)", b, err)
			}
		})
	}
}
