package agent

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"strconv"
	"testing"

	"github.com/rookhq/rook/internal/vfs"
)

// forgedRecordBytes is the bytes of a whole event record as docs/storage.md
// ("Log (.log)") lays one out: a note of seq 1 labelled "forged", its body
// id ground until its checksum's bytes are printable, so that a JSON
// string holds the record as it is.
func forgedRecordBytes() string {
	castagnoli := crc32.MakeTable(crc32.Castagnoli)
	for i := 0; ; i++ {
		body := []byte{10, 1, 0} // head: a note; seq 1; time +0
		body = append(body, fmt.Sprintf("%016d", i)...)
		body = append(body, 0, 0, 6) // no tokens; a label of 6 bytes
		body = append(body, "forged"...)
		rec := binary.AppendUvarint(nil, uint64(len(body)))
		rec = append(rec, body...)
		crc := binary.LittleEndian.AppendUint32(nil, crc32.Checksum(rec, castagnoli))
		printable := true
		for _, c := range crc {
			printable = printable && c >= 0x20 && c < 0x7f && c != '"' && c != '\\'
		}
		if printable {
			return string(crc) + string(rec)
		}
	}
}

// A transcript's entry type (or tool, or model name) is an event's label:
// one that holds the bytes of a whole record, which the log refuses (a
// reader would take it for a record), does not fail the import: the event
// goes in with its label escaped, and export gives the file back byte for
// byte, from the lines stored.
func TestImportEscapesALabelThatWouldHoldAnEventRecord(t *testing.T) {
	fsys := vfs.NewMem()
	r := testRook(t, fsys)
	src := "/home/u/.claude/projects/-home-u-proj/s1.jsonl"
	forged := forgedRecordBytes()
	line := fmt.Sprintf(`{"type":%s,"sessionId":"s1","timestamp":"2026-02-10T21:01:30.000Z"}`, appendJSONString(nil, []byte(forged)))
	lines := claudeLines("s1", 1)
	lines = append(lines[:2:2], append([]string{line}, lines[2:]...)...)
	data := writeSource(t, fsys, src, lines, "")
	rep := mustImport(t, r, FormatClaudeCode, "/home/u/.claude/projects")
	f := fileByPath(t, rep, src)
	evs, err := r.Log.Read(*f.Session, 0, 100)
	if err != nil {
		t.Fatal(err)
	}
	q := strconv.QuoteToASCII(forged)
	escaped := q[1 : len(q)-1]
	found := false
	for _, ev := range evs {
		if ev.Label == forged {
			t.Fatalf("event #%d holds the label that holds a record", ev.Seq)
		}
		found = found || ev.Label == escaped
	}
	if !found || uint64(len(evs)) != uint64(rep.Events) {
		t.Fatalf("no event labelled %q among the %d read (%d imported)", escaped, len(evs), rep.Events)
	}
	mustExport(t, r, *f.Session, data)
}
