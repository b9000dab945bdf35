package agent

import (
	"fmt"
	"slices"
	"strings"
)

// Undoing a rollout's patches on a file as it is on disk, as `git apply
// -R` would: what a file that existed before the session held at a
// rewind point, when the rollout holds only the patches' changes to it
// (codex_rewind.go, codexReverse). Each patch after the point is undone
// in turn, the last first, only where the file holds exactly what it
// left: a hunk's kept and added lines, in order, where a Codex chunk's
// are found once only (its lines carry no line numbers, so a sequence
// found twice leaves where it was unknown), or at the line a
// patch_apply_end's unified diff names. Anything else (the file changed
// since the session, a hunk that does not reverse) is refused, never
// guessed.

// codexText is a file's content as lines, without their line endings.
type codexText struct {
	lines   []string
	crlf    bool // its lines end with "\r\n"
	finalNL bool // its last line ends with one (an empty file: true)
}

// splitCodexText reads a file's bytes as lines; why says why not: its
// lines end some with CRLF, some with LF (which a reversed line ended
// with is then not known).
func splitCodexText(b []byte) (codexText, string) {
	s := string(b)
	crlf := strings.Count(s, "\r\n")
	lf := strings.Count(s, "\n") - crlf
	if crlf > 0 && lf > 0 {
		return codexText{}, fmt.Sprintf("its lines end some with CRLF (%d), some with LF (%d): what a line put back ended with is not known", crlf, lf)
	}
	t := codexText{crlf: crlf > 0, finalNL: true}
	if s == "" {
		return t, ""
	}
	t.lines = strings.Split(s, "\n")
	if n := len(t.lines); t.lines[n-1] == "" {
		t.lines = t.lines[:n-1]
	} else {
		t.finalNL = false
	}
	if t.crlf {
		for i, l := range t.lines {
			if i < len(t.lines)-1 || t.finalNL {
				t.lines[i] = strings.TrimSuffix(l, "\r")
			}
		}
	}
	return t, ""
}

// rawCodexText reads a file's bytes as lines ended by LF, a CRLF's "\r"
// kept in its line: the text, whatever its endings, as a unified diff's
// lines (reverseUnifiedHunks) hold it.
func rawCodexText(b []byte) codexText {
	t := codexText{finalNL: true}
	if len(b) == 0 {
		return t
	}
	t.lines = strings.Split(string(b), "\n")
	if n := len(t.lines); t.lines[n-1] == "" {
		t.lines = t.lines[:n-1]
	} else {
		t.finalNL = false
	}
	return t
}

// bytes is the text's content, each line ended as its file's are.
func (t codexText) bytes() []byte {
	eol := "\n"
	if t.crlf {
		eol = "\r\n"
	}
	s := strings.Join(t.lines, eol)
	if t.finalNL && len(t.lines) > 0 {
		s += eol
	}
	return []byte(s)
}

// reverseCodexChunks undoes an update's chunks (as applyCodexChunks
// applies them) on the file's lines after it; why says why they do not
// reverse. Codex writes a file it updated with a newline at its end, and
// drops an empty last line it had: whether it had either before is not in
// the patch: it is given one newline, and no empty last line.
// maxReverseSteps bounds the ways reverseCodexChunks tries (each a search
// of the file for a chunk's lines).
const maxReverseSteps = 1 << 12

func reverseCodexChunks(after codexText, chunks []codexChunk) (codexText, string) {
	if !after.finalNL {
		return codexText{}, "it does not end with a newline, which Codex writes after an update: it changed since the session"
	}
	type piece struct {
		old, new []string
		ctx      string
		eof      bool
	}
	pieces := make([]piece, len(chunks))
	for k, c := range chunks {
		p := piece{ctx: c.Context, eof: c.EOF}
		for _, l := range c.Lines {
			switch l[0] {
			case '-':
				p.old = append(p.old, l[1:])
			case '+':
				p.new = append(p.new, l[1:])
			default:
				p.old, p.new = append(p.old, l[1:]), append(p.new, l[1:])
			}
		}
		pieces[k] = p
	}
	lines := after.lines
	// A chunk that only adds goes at the end of the file, after every
	// other chunk's lines, in order: the last one's are last.
	end := len(lines)
	for k := len(pieces) - 1; k >= 0; k-- {
		p := pieces[k]
		if len(p.old) > 0 {
			continue
		}
		if n := len(p.new); n > end || !slices.Equal(lines[end-n:end], p.new) {
			return codexText{}, fmt.Sprintf("chunk %d adds lines at the end of the file, and they are not there: it changed since the session", k+1)
		}
		end -= len(p.new)
	}
	// Each chunk's lines are found as Codex's apply placed them; one whose
	// old lines end with an empty line may have been placed without it
	// (Codex's retry where the file lacks it), and where both ways give
	// the file, what it held is not known.
	var results [][]string
	why := ""
	const tooMany = "its chunks can be undone in too many ways (chunks whose last line is empty) to know which Codex applied"
	steps := 0
	var walk func(k, at int, out []string) bool
	walk = func(k, at int, out []string) bool {
		// Ways that fail at a later chunk add no result: without a bound
		// on the steps, n such chunks took 2^n of them (24: 15 s, for a
		// refusal).
		if steps++; steps > maxReverseSteps {
			why = tooMany
			return false
		}
		if k == len(pieces) {
			results = append(results, append(out, lines[at:end]...))
			return len(results) <= 16
		}
		p := pieces[k]
		if len(p.old) == 0 {
			return walk(k+1, at, out)
		}
		from := at
		if p.ctx != "" {
			i := slices.Index(lines[from:end], p.ctx)
			if i < 0 {
				why = fmt.Sprintf("chunk %d's @@ line (%q) is not in the file: it changed since the session", k+1, clip(p.ctx, 60))
				return false
			}
			from += i + 1
		}
		type variant struct{ old, new []string }
		vs := []variant{{p.old, p.new}}
		if p.old[len(p.old)-1] == "" {
			// (Codex drops a last empty line the file lacks, and the
			// chunk's added one with it.)
			v := variant{p.old[:len(p.old)-1], p.new}
			if len(v.new) > 0 && v.new[len(v.new)-1] == "" {
				v.new = v.new[:len(v.new)-1]
			}
			vs = append(vs, v)
		}
		placedAt := -1
		for vi, v := range vs {
			i, n := findOnce(lines[:end], v.new, from, p.eof)
			if vi == 1 && n == 1 && i == placedAt && len(v.new) == len(p.new)-1 {
				// Both ways at the same line, the empty last line kept
				// by both: the same lines either way.
				continue
			}
			if len(v.old) == 0 {
				// (With no old lines left, Codex puts the new ones where
				// it is, at the end of the file or not.)
				i, n = from, 0
				if from+len(v.new) <= end && slices.Equal(lines[from:from+len(v.new)], v.new) {
					n = 1
				}
			}
			switch {
			case len(v.new) == 0 && len(v.old) > 0 && !p.eof:
				why = fmt.Sprintf("chunk %d only removes lines, with none kept around them: where they were is not known", k+1)
				return false
			case n == 0:
				if why == "" {
					why = fmt.Sprintf("chunk %d does not reverse, the lines it leaves are not in the file: it changed since the session", k+1)
				}
				continue
			case n > 1:
				why = fmt.Sprintf("chunk %d does not reverse: the lines it leaves are in the file %d times, and the patch does not say which", k+1, n)
				return false
			}
			if vi == 0 {
				placedAt = i
			}
			next := out
			if len(vs) > 1 {
				next = slices.Clone(out) // (each way its own)
			}
			next = append(append(next, lines[at:i]...), v.old...)
			if !walk(k+1, i+len(v.new), next) {
				return false
			}
		}
		return true
	}
	if !walk(0, 0, nil) && len(results) <= 16 {
		return codexText{}, why
	}
	// What Codex's apply makes of it must be the file: else the chunks
	// were not placed where it placed them.
	var found []string
	for _, out := range results {
		if got, ok := applyCodexChunks(out, chunks); ok && slices.Equal(got, after.lines) {
			if found != nil && !slices.Equal(found, out) {
				return codexText{}, "its chunks, undone, give the file from more than one file (a chunk whose last line is empty may have been placed with it or without it): which it was is not known"
			}
			found = out
		}
	}
	if len(results) > 16 {
		return codexText{}, tooMany
	}
	if found == nil {
		if len(results) == 0 {
			return codexText{}, why
		}
		return codexText{}, "its chunks, undone, do not apply again to give the file: where Codex placed them is not known"
	}
	return codexText{lines: found, crlf: after.crlf, finalNL: true}, ""
}

// findOnce finds pat in lines at or after from, exactly (for a chunk at
// the end of the file, at the end only): where, and how many times (up
// to 2) it is there.
func findOnce(lines, pat []string, from int, eof bool) (at, n int) {
	if eof {
		if i := len(lines) - len(pat); i >= from && slices.Equal(lines[i:], pat) {
			return i, 1
		}
		return 0, 0
	}
	if len(pat) == 0 {
		return from, 2 // (anywhere)
	}
	for i := from; i+len(pat) <= len(lines); i++ {
		if slices.Equal(lines[i:i+len(pat)], pat) {
			if n++; n == 1 {
				at = i
			} else {
				return at, n
			}
		}
	}
	return at, n
}

// reverseUnifiedHunks undoes a patch_apply_end's unified diff on the
// file's lines after it: each hunk's new lines must be the file's at the
// line its header names, exactly, the hunks in order, and its old lines
// then land where its header says. A "\ No newline at end of file" after
// a hunk's last line says that side's file ends without one. why says
// why it does not reverse.
func reverseUnifiedHunks(after codexText, diff string) (codexText, string) {
	dl := strings.Split(strings.TrimSuffix(diff, "\n"), "\n")
	if diff == "" {
		dl = nil
	}
	hunks := false
	for i, l := range dl {
		hunks = hunks || strings.HasPrefix(l, "@@")
		if l == "" || l[0] != ' ' && l[0] != '-' && l[0] != '+' || !hunks {
			dl[i] = strings.TrimSuffix(l, "\r") // (a header's; a line's "\r" is its own)
		}
	}
	i := 0
	for i < len(dl) && !strings.HasPrefix(dl[i], "@@") {
		if !strings.HasPrefix(dl[i], "--- ") && !strings.HasPrefix(dl[i], "+++ ") {
			return codexText{}, fmt.Sprintf("its diff's line %d is not a hunk's", i+1)
		}
		i++
	}
	// The diff holds each line with its "\r", if it had one: the file's
	// lines are matched, and put back, with theirs.
	lines := after.rawLines()
	before := codexText{finalNL: after.finalNL}
	var out []string
	at, hunk := 0, 0
	for i < len(dl) {
		hunk++
		oldStart, oldN, newStart, newN, ok := parseHunkHeaderNew(dl[i])
		if !ok {
			return codexText{}, fmt.Sprintf("hunk %d's header does not read", hunk)
		}
		i++
		var old, new []string
		oldNoNL, newNoNL := false, false
		last := byte(0)
		for ; i < len(dl) && !strings.HasPrefix(dl[i], "@@"); i++ {
			l := dl[i]
			switch {
			case strings.HasPrefix(l, `\`):
				if last == 0 {
					return codexText{}, fmt.Sprintf("hunk %d's diff does not read", hunk)
				}
				oldNoNL = oldNoNL || last != '+'
				newNoNL = newNoNL || last != '-'
			case l == "":
				old, new, last = append(old, ""), append(new, ""), ' '
			case l[0] == ' ':
				old, new, last = append(old, l[1:]), append(new, l[1:]), ' '
			case l[0] == '-':
				old, last = append(old, l[1:]), '-'
			case l[0] == '+':
				new, last = append(new, l[1:]), '+'
			default:
				return codexText{}, fmt.Sprintf("hunk %d's diff does not read", hunk)
			}
		}
		if len(old) != oldN || len(new) != newN {
			return codexText{}, fmt.Sprintf("hunk %d's lines are not as many as its header says", hunk)
		}
		pos, opos := newStart-1, oldStart-1
		if newN == 0 {
			pos = newStart // (an empty side's header names the line before)
		}
		if oldN == 0 {
			opos = oldStart
		}
		if pos < at || pos > len(lines) || newN > len(lines)-pos || !slices.Equal(lines[pos:pos+newN], new) {
			return codexText{}, fmt.Sprintf("hunk %d does not reverse, the lines it leaves are not in the file at line %d: it changed since the session", hunk, newStart)
		}
		if pos+newN == len(lines) {
			if newNoNL == after.finalNL && len(lines) > 0 {
				return codexText{}, fmt.Sprintf("hunk %d does not reverse, the file's end (a newline or none) is not as it leaves it: it changed since the session", hunk)
			}
			before.finalNL = !oldNoNL
		} else if newNoNL || oldNoNL {
			return codexText{}, fmt.Sprintf("hunk %d does not reverse: it says a file ends in its middle", hunk)
		}
		out = append(out, lines[at:pos]...)
		if len(out) != opos {
			return codexText{}, fmt.Sprintf("hunk %d does not reverse: its old lines would be at line %d, not %d as its header says", hunk, len(out)+1, oldStart)
		}
		out = append(out, old...)
		at = pos + newN
	}
	before.lines = append(out, lines[at:]...)
	return before.fromRaw(), ""
}

// rawLines are the text's lines each with the "\r" of its CRLF, if it has
// one.
func (t codexText) rawLines() []string {
	if !t.crlf {
		return t.lines
	}
	raw := make([]string, len(t.lines))
	for i, l := range t.lines {
		if i < len(t.lines)-1 || t.finalNL {
			l += "\r"
		}
		raw[i] = l
	}
	return raw
}

// fromRaw is t, whose lines are raw (rawLines), as a CRLF text where every
// line ends with CRLF; else as it is (its bytes the same: each "\r" kept
// in its line).
func (t codexText) fromRaw() codexText {
	n := 0
	for i, l := range t.lines {
		if strings.HasSuffix(l, "\r") && (i < len(t.lines)-1 || t.finalNL) {
			n++
		}
	}
	full := len(t.lines)
	if !t.finalNL {
		full--
	}
	if n == 0 || n != full {
		return t
	}
	c := codexText{lines: make([]string, len(t.lines)), crlf: true, finalNL: t.finalNL}
	for i, l := range t.lines {
		if i < full {
			l = strings.TrimSuffix(l, "\r")
		}
		c.lines[i] = l
	}
	return c
}

// parseHunkHeaderNew reads "@@ -a,b +c,d @@ ..." with the new side's
// start (a count left out is 1).
func parseHunkHeaderNew(h string) (oldStart, oldN, newStart, newN int, ok bool) {
	oldStart, oldN, newN, ok = parseHunkHeader(h)
	if !ok {
		return 0, 0, 0, 0, false
	}
	_, rest, _ := strings.Cut(h, " +")
	s, _, _ := strings.Cut(rest, " @@")
	s, _, _ = strings.Cut(s, ",")
	if _, err := fmt.Sscanf(s, "%d", &newStart); err != nil || newStart < 0 {
		return 0, 0, 0, 0, false
	}
	return oldStart, oldN, newStart, newN, true
}
