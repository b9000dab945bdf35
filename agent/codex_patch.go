package agent

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"
)

// Codex's apply_patch format ("V4A"), as its parser reads it (openai/codex
// codex-rs/apply-patch/src/parser.rs, read for the grammar; nothing of it
// is copied):
//
//	*** Begin Patch
//	*** Add File: <path>          then the file's lines, each after a "+"
//	*** Delete File: <path>
//	*** Update File: <path>
//	*** Move to: <path>           optional, right after Update File
//	@@ <context>                  a chunk: "@@" or "@@ " and a line that
//	 <kept>                       locates it; then lines after " " (kept),
//	-<removed>                    "-" or "+"; an empty line is an empty
//	+<added>                      kept line; "*** End of File" ends a chunk
//	*** End of File               at the file's end
//	*** End Patch
//
// The markers may be padded with spaces, and the whole may sit in a
// heredoc (<<'EOF' ... EOF), as Codex's lenient mode takes it. An
// update's chunks carry no line numbers: Codex finds each by its context
// lines, in the file as it is, so a diff made of them says where a chunk
// applies by its context only.

// codexPatchOp is one file operation of a Codex patch.
type codexPatchOp struct {
	Kind    string // "add", "delete", "update"
	Path    string
	MoveTo  string       // update: the path it moves to, "" if none
	Content []byte       // add: the whole new file
	Chunks  []codexChunk // update
}

// codexChunk is one chunk of an update: the line after its "@@", and its
// lines, each with its prefix (' ', '-', '+').
type codexChunk struct {
	Context string
	Lines   []string
	EOF     bool // "*** End of File": the chunk is at the end of the file
}

// codexPatchError says where a patch stops reading as one.
type codexPatchError struct {
	Line int // 1-based line of the patch; 0: the patch as a whole
	Msg  string
}

func (e *codexPatchError) Error() string {
	if e.Line == 0 {
		return "not a Codex patch: " + e.Msg
	}
	return fmt.Sprintf("Codex patch, line %d: %s", e.Line, e.Msg)
}

const (
	codexBegin  = "*** Begin Patch"
	codexEnd    = "*** End Patch"
	codexAdd    = "*** Add File:"
	codexDelete = "*** Delete File:"
	codexUpdate = "*** Update File:"
	codexMove   = "*** Move to:"
	codexEOF    = "*** End of File"
)

// parseCodexPatch reads a patch into its operations. On an error it
// returns the operations read before it too: a patch Codex would have
// refused whole applied none of them, and the caller says so.
func parseCodexPatch(text string) ([]codexPatchOp, error) {
	lines := strings.Split(strings.TrimSpace(text), "\n")
	for i, l := range lines {
		lines[i] = strings.TrimSuffix(l, "\r")
	}
	first := 1 // the line number of lines[0]
	if n := len(lines); n >= 4 && (lines[0] == "<<EOF" || lines[0] == "<<'EOF'" || lines[0] == `<<"EOF"`) &&
		strings.HasSuffix(lines[n-1], "EOF") && strings.TrimSpace(lines[1]) == codexBegin {
		lines, first = lines[1:n-1], 2
	}
	if strings.TrimSpace(lines[0]) != codexBegin {
		return nil, &codexPatchError{Msg: "its first line is not " + codexBegin}
	}
	end := len(lines)
	if end < 2 || strings.TrimSpace(lines[end-1]) != codexEnd {
		// Cut short (a rollout's truncated call), or never ended: Codex
		// applies no such patch. What reads is returned, for the note.
		ops, _ := parseCodexOps(lines[1:], first+1)
		return ops, &codexPatchError{Msg: "it does not end with " + codexEnd + " (cut short?)"}
	}
	return parseCodexOps(lines[1:end-1], first+1)
}

// parseCodexOps reads the operations of a patch's lines between its
// markers; n is the line number of lines[0].
func parseCodexOps(lines []string, n int) ([]codexPatchOp, error) {
	var ops []codexPatchOp
	for i := 0; i < len(lines); {
		head := strings.TrimSpace(lines[i])
		if head == "" {
			i++ // a blank line between operations
			continue
		}
		var op codexPatchOp
		switch {
		case strings.HasPrefix(head, codexAdd):
			op.Kind, op.Path = "add", strings.TrimSpace(head[len(codexAdd):])
		case strings.HasPrefix(head, codexDelete):
			op.Kind, op.Path = "delete", strings.TrimSpace(head[len(codexDelete):])
		case strings.HasPrefix(head, codexUpdate):
			op.Kind, op.Path = "update", strings.TrimSpace(head[len(codexUpdate):])
		default:
			return ops, &codexPatchError{Line: n + i, Msg: fmt.Sprintf("%q is not an operation (%s, %s or %s)", clip(head, 60), codexAdd, codexDelete, codexUpdate)}
		}
		if op.Path == "" {
			return ops, &codexPatchError{Line: n + i, Msg: "no path after " + strings.TrimSuffix(head, ":")}
		}
		at := n + i
		i++
		switch op.Kind {
		case "add":
			var b bytes.Buffer
			for ; i < len(lines) && strings.HasPrefix(lines[i], "+"); i++ {
				b.WriteString(lines[i][1:])
				b.WriteByte('\n')
			}
			op.Content = b.Bytes()
		case "update":
			if i < len(lines) && strings.HasPrefix(lines[i], codexMove) {
				if op.MoveTo = strings.TrimSpace(lines[i][len(codexMove):]); op.MoveTo == "" {
					return ops, &codexPatchError{Line: n + i, Msg: "no path after " + strings.TrimSuffix(codexMove, ":")}
				}
				i++
			}
			for i < len(lines) {
				if strings.TrimSpace(lines[i]) == "" {
					i++
					continue
				}
				if strings.HasPrefix(lines[i], "*") {
					break
				}
				c, used, err := parseCodexChunk(lines[i:], n+i, len(op.Chunks) == 0)
				if err != nil {
					return ops, err
				}
				op.Chunks = append(op.Chunks, c)
				i += used
			}
			if len(op.Chunks) == 0 {
				return ops, &codexPatchError{Line: at, Msg: fmt.Sprintf("an update of %s with no changes", op.Path)}
			}
		}
		ops = append(ops, op)
	}
	return ops, nil
}

// parseCodexChunk reads one chunk of an update from lines (n: the line
// number of lines[0]) and says how many lines it took. The first chunk
// of an update may go without its "@@".
func parseCodexChunk(lines []string, n int, first bool) (codexChunk, int, error) {
	var c codexChunk
	start := 0
	switch {
	case lines[0] == "@@":
		start = 1
	case strings.HasPrefix(lines[0], "@@ "):
		c.Context, start = lines[0][3:], 1
	case !first:
		return c, 0, &codexPatchError{Line: n, Msg: fmt.Sprintf("a chunk must begin with @@, not %q", clip(lines[0], 60))}
	}
	i := start
	for ; i < len(lines); i++ {
		l := lines[i]
		if l == codexEOF {
			if len(c.Lines) == 0 {
				break
			}
			c.EOF = true
			i++
			break
		}
		if l == "" {
			c.Lines = append(c.Lines, " ") // an empty kept line
			continue
		}
		if l[0] != ' ' && l[0] != '-' && l[0] != '+' {
			if len(c.Lines) == 0 {
				return c, 0, &codexPatchError{Line: n + i, Msg: fmt.Sprintf("a chunk's line must begin with ' ', '-' or '+', not %q", clip(l, 60))}
			}
			break // the next chunk
		}
		c.Lines = append(c.Lines, l)
	}
	if len(c.Lines) == 0 {
		return c, 0, &codexPatchError{Line: n, Msg: "a chunk with no lines"}
	}
	return c, i, nil
}

// clip shortens s to at most n bytes, for a message.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// writeCodexChunks writes an update's chunks as unified-diff hunks. The
// patch does not say where in the file a chunk is: each hunk's header
// says "?" for its line numbers, its counts right, and the chunk's
// context line after it, where git puts a function's name. It returns the
// lines added and removed.
func writeCodexChunks(buf *bytes.Buffer, chunks []codexChunk, color bool) (added, removed int) {
	for _, c := range chunks {
		old, new := 0, 0
		for _, l := range c.Lines {
			switch l[0] {
			case '-':
				old++
				removed++
			case '+':
				new++
				added++
			default:
				old++
				new++
			}
		}
		head := "@@ -?," + strconv.Itoa(old) + " +?," + strconv.Itoa(new) + " @@"
		if color {
			head = colorFrag + head + colorReset
		}
		if c.Context != "" {
			head += " " + patchText(c.Context, color)
		}
		buf.WriteString(head + "\n")
		writeDiffLines(buf, c.Lines, color)
		if c.EOF {
			buf.WriteString("\\ the chunk is at the end of the file (*** End of File)\n")
		}
	}
	return added, removed
}

// writeDiffLines writes lines that each begin with ' ', '-' or '+'.
func writeDiffLines(buf *bytes.Buffer, lines []string, color bool) {
	for _, l := range lines {
		l = patchText(l, color)
		switch {
		case color && l != "" && l[0] == '-':
			buf.WriteString(colorOld + l + colorReset + "\n")
		case color && l != "" && l[0] == '+':
			buf.WriteString(colorNew + l + colorReset + "\n")
		default:
			buf.WriteString(l + "\n")
		}
	}
}
