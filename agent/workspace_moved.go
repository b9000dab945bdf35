package agent

import (
	"fmt"
	"path/filepath"
)

// A session is bound to the workspace it started in: its captures name
// that directory, and diff and rewind compare and write there. A project
// moved since (renamed, copied elsewhere) is named with -C: the user
// deciding where the session's workspace is now (workspaceFor). Paths a
// user gives in a directory of the workspace start there (PathsFrom).

// movedWorkspaceHint ends the refusal of a diff or rewind whose workspace
// is not on this disk.
const movedWorkspaceHint = "put it back where it was, or, if it is somewhere else now, name it with -C (`rook -C DIR session ...`; a DIR holding where it was, its parent say, is the same project run from above, not where it moved)"

// workspaceFor returns the directory a diff or rewind works in: dir, the
// one the user named with -C, when it is given and is neither the
// session's recorded workspace, nor in it, nor a directory holding it (as
// named, or through links); the recorded one otherwise. A -C of a
// directory in the workspace is the same project, run from there; a -C
// holding it (its parent, the home directory, a monorepo's top a script
// always passes) is the same project run from above, never where it
// moved to: taking it wrote the captured files into it and removed its
// own files as added since. moved says dir was taken.
//
// A -C elsewhere is taken even when the recorded workspace is still on
// the disk: a project copied (cp -r ws ws2) is rewound in the copy the
// user named, not in the original behind the user's back.
func workspaceFor(recorded, dir string) (ws string, moved bool) {
	if dir == "" || recorded == "" || !filepath.IsAbs(dir) || !filepath.IsAbs(recorded) {
		return recorded, false
	}
	rec, d := filepath.Clean(recorded), filepath.Clean(dir)
	if within(rec, d) || within(d, rec) {
		return recorded, false
	}
	rd, err := filepath.EvalSymlinks(d)
	if err != nil {
		return d, true
	}
	if rr, err := filepath.EvalSymlinks(rec); err == nil && (within(rr, rd) || within(rd, rr)) {
		return recorded, false
	}
	// The recorded workspace not on the disk (moved): a directory above
	// it that is still there, reached through a link, holds where it was.
	for p := filepath.Dir(rec); p != filepath.Dir(p); p = filepath.Dir(p) {
		if rp, err := filepath.EvalSymlinks(p); err == nil {
			if within(rd, rp) {
				return recorded, false
			}
			break
		}
	}
	return d, true
}

// movedNote says a diff or rewind worked in dir (-C), not where the
// session's captures were taken.
func movedNote(recorded, dir string) string {
	return fmt.Sprintf("the session's workspace was %s; -C %s is taken as where it is now", recorded, dir)
}

// PathsFrom turns the paths a user gave, in directory dir, into paths
// CaptureSession takes. When dir is in the session's workspace (as named,
// or through links) and is not the workspace itself, a relative path
// starts at dir, as it does for every command line tool: it is made
// absolute there. Elsewhere (dir outside the workspace, or the workspace
// itself) the paths are left as they are: relative to the workspace.
// Absolute paths are always left as they are.
func PathsFrom(workspace, dir string, paths []string) []string {
	if workspace == "" || dir == "" || !filepath.IsAbs(workspace) || !filepath.IsAbs(dir) {
		return paths
	}
	ws, d := filepath.Clean(workspace), filepath.Clean(dir)
	in := within(ws, d)
	if !in {
		rws, err1 := filepath.EvalSymlinks(ws)
		rd, err2 := filepath.EvalSymlinks(d)
		if err1 == nil && err2 == nil && within(rws, rd) {
			in, ws, d = true, rws, rd
		}
	}
	if !in || d == ws {
		return paths
	}
	out := make([]string, len(paths))
	for i, p := range paths {
		if filepath.IsAbs(p) || p == "" {
			out[i] = p
		} else {
			out[i] = filepath.Join(d, p)
		}
	}
	return out
}
