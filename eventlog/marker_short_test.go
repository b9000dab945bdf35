package eventlog

import (
	"errors"
	"io/fs"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/rookhq/rook/internal/vfs"
)

// shortMarkerFS makes the next append to the dirty marker write only half
// its bytes and fail, as a full disk does.
type shortMarkerFS struct {
	vfs.FS
	short bool
}

func (s *shortMarkerFS) OpenFile(name string, flag int, perm fs.FileMode) (vfs.File, error) {
	f, err := s.FS.OpenFile(name, flag, perm)
	if err != nil || !s.short || filepath.Base(name) != dirtyMarker {
		return f, err
	}
	s.short = false
	return &shortFile{File: f}, nil
}

type shortFile struct{ vfs.File }

func (f *shortFile) Write(p []byte) (int, error) {
	n, err := f.File.Write(p[:len(p)/2])
	if err != nil {
		return n, err
	}
	return n, &fs.PathError{Op: "write", Path: f.Name(), Err: syscall.ENOSPC}
}

// TestMarkerAppendAfterAShortOne: an append to the dirty marker that wrote
// part of its line and failed must not take the next append's first line
// with it: that line (a fork's "new" tag here) starts a line of its own.
func TestMarkerAppendAfterAShortOne(t *testing.T) {
	mem := vfs.NewMem()
	fsys := &shortMarkerFS{FS: mem}
	l, err := Open("/h/events", Options{FS: fsys, Writable: true})
	if err != nil {
		t.Fatal(err)
	}
	p, err := l.Create(Meta{Title: "parent"})
	if err != nil {
		t.Fatal(err)
	}
	gone, err := l.Create(Meta{Title: "to remove"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Append(p.ID, Event{Kind: KindUser, Body: body(1)}); err != nil {
		t.Fatal(err)
	}
	if err := l.Flush(); err != nil {
		t.Fatal(err)
	}
	fsys.short = true
	if _, err := l.Remove(gone.ID); !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("remove with the marker's append cut short: %v", err)
	}
	f, err := l.Fork(p.ID, 1, Meta{Title: "fork"})
	if err != nil {
		t.Fatal(err)
	}
	b, err := vfs.ReadFile(mem, "/h/events/"+dirtyMarker)
	if err != nil {
		t.Fatal(err)
	}
	_, tags, forks := parseMarker(b)
	if tags[f.ID] != tagNew {
		t.Fatalf("the fork's new tag is lost after the short append; marker:\n%s", b)
	}
	if _, ok := forks[f.ID]; !ok {
		t.Fatalf("the fork's record is lost; marker:\n%s", b)
	}
	if tags[gone.ID] != "" {
		t.Fatalf("the removal that failed reads as tagged %q", tags[gone.ID])
	}
	if !strings.Contains(string(b), "\n"+f.ID.String()+" "+tagNew) {
		t.Fatalf("the fork's tag does not start a line:\n%s", b)
	}
}
