package agent

import (
	"path"
	"strings"
)

// The paths of a Codex rollout are the paths of the machine it was made
// on, which may not be the one reading it: a rollout made on Windows
// names C:\Users\x\proj\a.go, C:/Users/x/proj/a.go or
// \\server\share\a.go, and its patches may name src\a.go. So the diff
// reads them by their own rules, never the host's (path/filepath): a
// POSIX path is absolute from "/"; a Windows one from a drive letter
// ("C:\", "C:/") or a share (\\server\share). A Windows path is read with
// its backslashes as slashes, and its letters in any case (Windows
// matches names so).

// rolloutWinAbs says whether p is an absolute Windows path: a drive
// letter, a colon and a slash of either kind, or a share's two leading
// backslashes.
func rolloutWinAbs(p string) bool {
	if len(p) >= 3 && p[1] == ':' && (p[2] == '\\' || p[2] == '/') &&
		('a' <= p[0] && p[0] <= 'z' || 'A' <= p[0] && p[0] <= 'Z') {
		return true
	}
	return strings.HasPrefix(p, `\\`)
}

// rolloutAbs says whether a rollout's path is absolute, by either rules.
func rolloutAbs(p string) bool {
	return strings.HasPrefix(p, "/") || rolloutWinAbs(p)
}

// rolloutClean cleans an absolute path of a rollout, or one relative to
// one (win: Windows's rules): a Windows one with slashes
// ("C:/Users/x/a.go", "//server/share/a.go"), its leading "//" kept.
func rolloutClean(p string, win bool) string {
	if !win {
		return path.Clean(p)
	}
	p = strings.ReplaceAll(p, `\`, "/")
	switch {
	case strings.HasPrefix(p, "//"):
		return "/" + path.Clean(p[1:])
	case len(p) >= 2 && p[1] == ':':
		return p[:2] + path.Clean("/"+p[2:])
	}
	return path.Clean(p)
}

// rolloutJoin is dir resolved against base, by the rules of the machine
// they come from (Windows's if either is a Windows path): an absolute
// dir stands alone; either may be "".
func rolloutJoin(base, dir string) string {
	win := rolloutWinAbs(base) || rolloutWinAbs(dir)
	switch {
	case dir == "":
		if base == "" {
			return ""
		}
		return rolloutClean(base, win)
	case base == "" || rolloutAbs(dir):
		return rolloutClean(dir, win)
	}
	return rolloutClean(base+"/"+dir, win)
}

// rolloutRel is p, an absolute path of a rollout, relative to its
// workspace ws (with slashes), when it is inside it: both POSIX paths, or
// both Windows ones (which match the workspace's letters in any case).
func rolloutRel(ws, p string) (string, bool) {
	win := rolloutWinAbs(ws)
	if !rolloutAbs(ws) || !rolloutAbs(p) || win != rolloutWinAbs(p) {
		return "", false
	}
	ws, p = rolloutClean(ws, win), rolloutClean(p, win)
	prefix := strings.TrimSuffix(ws, "/") + "/"
	if len(p) <= len(prefix) || p[:len(prefix)] != prefix && !(win && strings.EqualFold(p[:len(prefix)], prefix)) {
		return "", false
	}
	rel := p[len(prefix):]
	return rel, checkRel(rel) == nil
}

// rolloutRelUp is p, an absolute path as codexRel gives it (cleaned,
// a Windows one with slashes), named from the workspace ws:
// "../../etc/hosts", climbing to their common ancestor; false if they
// have none (another drive or share, or paths of two kinds of machine).
func rolloutRelUp(ws, p string) (string, bool) {
	// (A cleaned POSIX path never begins with "//": a share's does.)
	pWin := len(p) >= 3 && p[1] == ':' && p[2] == '/' || strings.HasPrefix(p, "//")
	win := rolloutWinAbs(ws)
	if !rolloutAbs(ws) || pWin != win {
		return "", false
	}
	parts := func(s string) []string {
		var out []string
		for _, e := range strings.Split(s, "/") {
			if e != "" {
				out = append(out, e)
			}
		}
		return out
	}
	wp, pp := parts(rolloutClean(ws, win)), parts(p)
	eq := func(a, b string) bool { return a == b || win && strings.EqualFold(a, b) }
	if win && (len(wp) == 0 || len(pp) == 0 || !eq(wp[0], pp[0])) {
		return "", false // another drive, or share's server
	}
	i := 0
	for i < len(wp) && i < len(pp) && eq(wp[i], pp[i]) {
		i++
	}
	return strings.Repeat("../", len(wp)-i) + strings.Join(pp[i:], "/"), true
}
