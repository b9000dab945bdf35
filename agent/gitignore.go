package agent

import (
	"path"
	"strings"
	"unicode/utf8"
)

// Ignore decides which workspace paths .gitignore files exclude.
//
// It follows gitignore(5) as closely as is practical:
//
//   - Blank lines and lines starting with "#" are skipped; "\#" and "\!"
//     match a literal "#" or "!". Trailing spaces are trimmed unless
//     escaped with a backslash ("foo\ " keeps one space); tabs are kept.
//     A UTF-8 byte order mark and CRLF line endings are accepted, as git does.
//   - A leading "!" negates the pattern: a path it matches is re-included.
//     The last matching pattern decides. Patterns of a .gitignore in a deeper
//     directory come after (take precedence over) those of its ancestors;
//     within one file, later lines win.
//   - A trailing "/" makes the pattern match directories only.
//   - A pattern with a "/" at the beginning or in the middle is anchored: it
//     is matched against the path relative to the directory of its
//     .gitignore. A pattern without such a slash is matched against the
//     basename of paths at any depth below that directory.
//   - "*" matches anything but "/", "?" one character but "/", "[...]" is a
//     character class ("!" or "^" negates; ranges, "\" escapes and POSIX
//     classes such as [:digit:] work). "**/x" matches x under any number of
//     leading directories, "x/**" everything inside x (not x itself), and
//     "a/**/b" zero or more directories between a and b; any other "**" is
//     an ordinary "*". A pattern with an unterminated class never matches.
//   - Patterns of a .gitignore in directory dir only apply to paths under dir.
//   - Patterns of the .gitignore files above the workspace (newIgnoreAbove)
//     stop at a nested repository (addRepo: a directory of the workspace
//     holding .git): git applies a repository's .gitignore files only
//     inside it. Those of the workspace's own .gitignore files still apply
//     inside one, as they always did in rook (git would not apply them).
//
// Parent directories: git cannot re-include a file when one of its parent
// directories is excluded, because it never looks inside an excluded
// directory. Match does not emulate this: it answers only for the path it is
// given and never looks at the path's ancestors. Callers must walk the tree
// top-down and not descend into a directory for which Match reports true
// (which is also what makes the walk cheap). Callers should also pass
// isDir=false for symbolic links, even ones pointing at directories, since git
// treats a symlink as a file.
//
// Matching is case-sensitive and works on UTF-8 characters ("?" matches one
// character, where git's byte-oriented matcher would match one byte; the two
// only differ for non-ASCII names).
//
// The zero value is ready to use. AddFile must not run concurrently with
// other calls; once all files are added, Match is safe for concurrent use.
type Ignore struct {
	byDir map[string][]ignorePattern // .gitignore directory ("" for the root) -> its patterns, in order
	// base is the workspace's path from the top of the git repository
	// it is in, when the workspace is a directory of one ("" when it is
	// the top, or in none): the patterns of the .gitignore files above
	// the workspace (newIgnoreAbove) are keyed from that top, and every
	// workspace path AddFile and Match are given is taken below base.
	base string
	// repos are the workspace directories (as AddFile is given them)
	// holding .git, nested repositories: below one, the patterns above
	// the workspace do not apply.
	repos map[string]bool
}

// ignorePattern is one parsed .gitignore line.
type ignorePattern struct {
	negate   bool     // "!pattern": a match re-includes the path
	dirOnly  bool     // "pattern/": matches directories only
	anchored bool     // contains a slash: matched against the whole path below the .gitignore's directory
	base     string   // glob matched against the basename, when !anchored
	segs     []string // slash-separated globs matched against the path, when anchored; "**" is special
}

// NewIgnore returns an Ignore without patterns; it ignores nothing.
func NewIgnore() *Ignore {
	return &Ignore{byDir: make(map[string][]ignorePattern)}
}

// AddFile adds the patterns of the .gitignore found in directory dir ("" for
// the workspace root; slash-separated, relative to the root). Adding a second
// file for the same directory appends its patterns after the first's.
func (ig *Ignore) AddFile(dir string, content []byte) {
	dir = ignoreCleanDir(dir)
	if ig.base != "" {
		dir = path.Join(ig.base, dir)
	}
	ig.addAt(dir, content)
}

// addAt adds the patterns of the .gitignore of directory dir, clean and
// relative to the top the Ignore's keys are from.
func (ig *Ignore) addAt(dir string, content []byte) {
	text := strings.TrimPrefix(string(content), "\ufeff")
	var pats []ignorePattern
	for line := range strings.SplitSeq(text, "\n") {
		line = strings.TrimSuffix(line, "\r")
		if line == "" || line[0] == '#' {
			continue
		}
		if p, ok := parseIgnorePattern(ignoreTrimTrailingSpaces(line)); ok {
			pats = append(pats, p)
		}
	}
	if len(pats) == 0 {
		return
	}
	if ig.byDir == nil {
		ig.byDir = make(map[string][]ignorePattern)
	}
	ig.byDir[dir] = append(ig.byDir[dir], pats...)
}

// addRepo records that the workspace directory dir holds .git: a nested
// repository, inside which the patterns of the .gitignore files above the
// workspace do not apply (git applies a repository's .gitignore files
// only inside it; the one above does not look into the nested one). dir
// itself is still matched by them. Nothing to do when there are none.
func (ig *Ignore) addRepo(dir string) {
	dir = ignoreCleanDir(dir)
	if ig.base == "" || dir == "" {
		return
	}
	if ig.repos == nil {
		ig.repos = map[string]bool{}
	}
	ig.repos[dir] = true
}

// inRepo says whether the workspace path rel is inside (below) a nested
// repository (addRepo).
func (ig *Ignore) inRepo(rel string) bool {
	if len(ig.repos) == 0 {
		return false
	}
	for d := path.Dir(rel); d != "."; d = path.Dir(d) {
		if ig.repos[d] {
			return true
		}
	}
	return false
}

// Match reports whether rel (slash-separated, relative to the root, no
// leading slash) is ignored; isDir says whether it is a directory. It looks at
// rel alone, not at its parent directories: see the type's documentation.
func (ig *Ignore) Match(rel string, isDir bool) bool {
	if ig == nil || len(ig.byDir) == 0 {
		return false
	}
	rel = strings.Trim(rel, "/")
	if rel == "" {
		return false
	}
	// Below a nested repository, the directories above the workspace
	// (keys shorter than base) are not looked at.
	stop := -1
	if ig.base != "" {
		if ig.inRepo(rel) {
			stop = len(ig.base)
		}
		rel = ig.base + "/" + rel
	}
	base := rel[strings.LastIndexByte(rel, '/')+1:]
	// Visit the .gitignore directories that are proper ancestors of rel,
	// deepest first, and each file's patterns last first: the first pattern
	// that matches is the last one in git's order, and it decides.
	end := len(rel)
	for {
		slash := strings.LastIndexByte(rel[:end], '/')
		dir, sub := "", rel
		if slash >= 0 {
			dir, sub = rel[:slash], rel[slash+1:]
		}
		if len(dir) < stop {
			return false
		}
		pats := ig.byDir[dir]
		for i := len(pats) - 1; i >= 0; i-- {
			if pats[i].match(sub, base, isDir) {
				return !pats[i].negate
			}
		}
		if slash < 0 {
			return false
		}
		end = slash
	}
}

// match reports whether p matches the path sub (relative to the directory of
// p's .gitignore), whose last element is base.
func (p *ignorePattern) match(sub, base string, isDir bool) bool {
	if p.dirOnly && !isDir {
		return false
	}
	if !p.anchored {
		return ignoreGlob(p.base, base)
	}
	return ignoreMatchSegs(p.segs, sub)
}

// ignoreCleanDir normalises the directory argument of AddFile.
func ignoreCleanDir(dir string) string {
	dir = strings.Trim(dir, "/")
	if dir == "" {
		return ""
	}
	dir = path.Clean(dir)
	if dir == "." {
		return ""
	}
	return dir
}

// ignoreTrimTrailingSpaces removes trailing spaces that are not escaped with
// a backslash, like git's trim_trailing_spaces. The escaping backslash stays
// and is removed later by the glob matcher.
func ignoreTrimTrailingSpaces(s string) string {
	lastSpace := -1
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case ' ':
			if lastSpace < 0 {
				lastSpace = i
			}
		case '\\':
			i++
			if i >= len(s) {
				return s // a trailing backslash: nothing to trim
			}
			lastSpace = -1
		default:
			lastSpace = -1
		}
	}
	if lastSpace >= 0 {
		return s[:lastSpace]
	}
	return s
}

// parseIgnorePattern parses one non-comment line whose trailing spaces have
// been trimmed. It reports false for lines that can match nothing.
func parseIgnorePattern(line string) (ignorePattern, bool) {
	var p ignorePattern
	if strings.HasPrefix(line, "!") {
		p.negate = true
		line = line[1:]
	}
	if strings.HasSuffix(line, "/") {
		p.dirOnly = true
		line = line[:len(line)-1]
	}
	if line == "" {
		return p, false
	}
	segs := ignoreSplit(line)
	if len(segs) == 1 {
		p.base = segs[0]
		return p, true
	}
	// A slash at the beginning or in the middle anchors the pattern; a
	// leading one is then dropped.
	p.anchored = true
	if segs[0] == "" && strings.HasPrefix(line, "/") {
		segs = segs[1:]
	}
	p.segs = segs
	return p, true
}

// ignoreSplit splits a pattern at its slashes. A backslash-escaped slash
// ("\/") is a slash too (a path cannot contain a literal one); other escapes
// are kept for the glob matcher, so "\\/" is an escaped backslash and a slash.
func ignoreSplit(pat string) []string {
	var segs []string
	var cur strings.Builder
	for i := 0; i < len(pat); i++ {
		switch c := pat[i]; {
		case c == '/':
			segs = append(segs, cur.String())
			cur.Reset()
		case c == '\\' && i+1 < len(pat) && pat[i+1] == '/':
			segs = append(segs, cur.String())
			cur.Reset()
			i++
		case c == '\\' && i+1 < len(pat):
			cur.WriteByte(c)
			cur.WriteByte(pat[i+1])
			i++
		default:
			cur.WriteByte(c)
		}
	}
	return append(segs, cur.String())
}

// ignoreMatchSegs matches the pattern segments segs against the
// slash-separated path t. A "**" segment matches zero or more path elements,
// or, as the last segment, one or more.
func ignoreMatchSegs(segs []string, t string) bool {
	m := segMatcher{segs: segs}
	// One "**" tries the rest at each place once already: only with two
	// or more is a place reached again, and worth remembering.
	stars := 0
	for _, s := range segs {
		if s == "**" {
			stars++
		}
	}
	m.remember = stars >= 2
	return m.match(0, t)
}

// segMatcher matches pattern segments against a path. Each "**" tries the
// rest of the pattern at every element of the path: with several of them,
// the same rest at the same place is reached in many ways, and trying each
// again was exponential in the number of "**"s (a .gitignore line such as
// "**/a/**/a/.../b" hung capture on a deep path). failed remembers, by the
// segment and the length of the path left, the places already tried: each
// is tried once.
type segMatcher struct {
	segs     []string
	remember bool
	failed   map[[2]int]bool
}

func (m *segMatcher) match(i int, t string) bool {
	for i < len(m.segs) {
		if m.segs[i] == "**" {
			if i+1 == len(m.segs) {
				return t != ""
			}
			for {
				if m.matchAt(i+1, t) {
					return true
				}
				slash := strings.IndexByte(t, '/')
				if slash < 0 {
					return false
				}
				t = t[slash+1:]
			}
		}
		if t == "" {
			return false
		}
		elem := t
		if slash := strings.IndexByte(t, '/'); slash >= 0 {
			elem, t = t[:slash], t[slash+1:]
		} else {
			t = ""
		}
		if !ignoreGlob(m.segs[i], elem) {
			return false
		}
		i++
	}
	return t == ""
}

// matchAt is match of the segments from i against t (a suffix of the
// path), once: a place that failed fails again without being tried.
func (m *segMatcher) matchAt(i int, t string) bool {
	key := [2]int{i, len(t)}
	if m.failed[key] {
		return false
	}
	if m.match(i, t) {
		return true
	}
	if !m.remember {
		return false
	}
	if m.failed == nil {
		m.failed = map[[2]int]bool{}
	}
	m.failed[key] = true
	return false
}

// ignoreGlob matches a glob without slashes against one path element, like
// git's wildmatch: "*" (any number of them in a row) matches any string, "?"
// any one character, "[...]" a character class, and "\" escapes the next
// character. A pattern with an unterminated class or a trailing backslash
// never matches.
func ignoreGlob(pat, name string) bool {
	pi, ni := 0, 0
	starP, starN := -1, -1 // where to resume after the last "*"
	for {
		if pi < len(pat) {
			switch c := pat[pi]; c {
			case '*':
				for pi < len(pat) && pat[pi] == '*' {
					pi++
				}
				if pi == len(pat) {
					return true
				}
				starP, starN = pi, ni
				continue
			case '?':
				if ni < len(name) {
					_, w := utf8.DecodeRuneInString(name[ni:])
					pi++
					ni += w
					continue
				}
			case '[':
				r, w := utf8.RuneError, 0
				if ni < len(name) {
					r, w = utf8.DecodeRuneInString(name[ni:])
				}
				ok, n, valid := ignoreClass(pat[pi:], r)
				if !valid {
					return false
				}
				if ok && w > 0 {
					pi += n
					ni += w
					continue
				}
			case '\\':
				if pi+1 >= len(pat) {
					return false
				}
				_, pw := utf8.DecodeRuneInString(pat[pi+1:])
				if lit := pat[pi+1 : pi+1+pw]; strings.HasPrefix(name[ni:], lit) {
					pi += 1 + pw
					ni += len(lit)
					continue
				}
			default:
				if ni < len(name) && name[ni] == c {
					pi++
					ni++
					continue
				}
			}
		} else if ni == len(name) {
			return true
		}
		// Mismatch: let the last "*" swallow one more character.
		if starP < 0 || starN >= len(name) {
			return false
		}
		_, w := utf8.DecodeRuneInString(name[starN:])
		starN += w
		pi, ni = starP, starN
	}
}

// ignoreClass matches the character class at the start of pat (which begins
// with "[") against r. It returns whether r is in the class, the length of
// the class in pat, and whether the class is well-formed (terminated, with
// known [:name:] classes). It follows git's wildmatch: "]" right after "[",
// "[!" or "[^" is literal, "-" is literal first or last, "\" escapes.
func ignoreClass(pat string, r rune) (matched bool, n int, valid bool) {
	i := 1
	negated := false
	if i < len(pat) && (pat[i] == '!' || pat[i] == '^') {
		negated = true
		i++
	}
	var prev rune
	hasPrev := false
	for first := true; ; first = false {
		if i >= len(pat) {
			return false, 0, false
		}
		c, w := utf8.DecodeRuneInString(pat[i:])
		if c == ']' && !first {
			i++
			break
		}
		switch {
		case c == '\\':
			i += w
			if i >= len(pat) {
				return false, 0, false
			}
			c, w = utf8.DecodeRuneInString(pat[i:])
			i += w
			if r == c {
				matched = true
			}
			prev, hasPrev = c, true
		case c == '-' && hasPrev && i+1 < len(pat) && pat[i+1] != ']':
			i += w
			hi, hw := utf8.DecodeRuneInString(pat[i:])
			if hi == '\\' {
				i += hw
				if i >= len(pat) {
					return false, 0, false
				}
				hi, hw = utf8.DecodeRuneInString(pat[i:])
			}
			i += hw
			if prev <= r && r <= hi {
				matched = true
			}
			hasPrev = false
		case c == '[' && i+1 < len(pat) && pat[i+1] == ':':
			end := strings.IndexByte(pat[i+2:], ']')
			if end < 0 {
				return false, 0, false
			}
			name := pat[i+2 : i+2+end]
			if !strings.HasSuffix(name, ":") {
				// No ":]": the "[" is an ordinary member.
				i += w
				if r == '[' {
					matched = true
				}
				prev, hasPrev = '[', true
				continue
			}
			in, known := ignorePOSIXClass(strings.TrimSuffix(name, ":"), r)
			if !known {
				return false, 0, false
			}
			if in {
				matched = true
			}
			i += 2 + end + 1
			hasPrev = false
		default:
			i += w
			if r == c {
				matched = true
			}
			prev, hasPrev = c, true
		}
	}
	return matched != negated, i, true
}

// ignorePOSIXClass reports whether r is in the named POSIX class (ASCII
// only, as in git) and whether the name is known.
func ignorePOSIXClass(name string, r rune) (in, known bool) {
	lower := 'a' <= r && r <= 'z'
	upper := 'A' <= r && r <= 'Z'
	digit := '0' <= r && r <= '9'
	printable := 0x20 <= r && r <= 0x7e
	switch name {
	case "alnum":
		return lower || upper || digit, true
	case "alpha":
		return lower || upper, true
	case "blank":
		return r == ' ' || r == '\t', true
	case "cntrl":
		return (0 <= r && r < 0x20) || r == 0x7f, true
	case "digit":
		return digit, true
	case "graph":
		return printable && r != ' ', true
	case "lower":
		return lower, true
	case "print":
		return printable, true
	case "punct":
		return printable && r != ' ' && !lower && !upper && !digit, true
	case "space":
		return r == ' ' || r == '\t' || r == '\n' || r == '\r', true
	case "upper":
		return upper, true
	case "xdigit":
		return digit || ('a' <= r && r <= 'f') || ('A' <= r && r <= 'F'), true
	}
	return false, false
}
