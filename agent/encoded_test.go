package agent

import (
	"bytes"
	"strings"
	"testing"
)

// FuzzNestedEncoded: the encoded values appendNestedEncoded finds in any
// text are in order, apart, inside the text, and each is what it is taken
// for (base64 of minEncoded bytes or more after one of encodedKeys, or a
// base64 data URL); masking any window of the text with them never fails
// and leaves no byte of them.
func FuzzNestedEncoded(f *testing.F) {
	png := "iVBORw0KGgoAAAANSUhEUgAA" + strings.Repeat("QUJD", 20)
	for _, s := range []string{
		`{"content":[{"type":"image","data":"` + png + `","mimeType":"image/png"}]}`,
		`{\"data\": \"` + png + `\", \"shot\":\"data:image/png;base64,` + png + `\"}`,
		`{"data":"data:image/png;base64,` + png + `"}`,
		`{"data":"short"} "data:text/plain;base64," "data:`,
		`"signature":"` + png + `"encrypted_content":"` + png,
	} {
		f.Add([]byte(s), false, uint16(0), uint16(len(s)))
		f.Add([]byte(s), true, uint16(3), uint16(len(s)/2))
	}
	f.Fuzz(func(t *testing.T, b []byte, escaped bool, from, to uint16) {
		q := plainQuote
		if escaped {
			q = escapedQuote
		}
		const base = 5
		spans := appendNestedEncoded(nil, b, q, base)
		end := base
		for _, s := range spans {
			if s.start < end || s.end <= s.start || s.end > base+len(b) {
				t.Fatalf("%q: span [%d, %d) after %d, in %d bytes", b, s.start, s.end, end, len(b))
			}
			end = s.end
			v := b[s.start-base : s.end-base]
			if !isDataURL(v) && (len(v) < minEncoded || !isBase64(v)) {
				t.Fatalf("%q: span %q is not encoded state", b, v)
			}
			if !strings.HasPrefix(s.marker, "[") {
				t.Fatalf("marker %q", s.marker)
			}
		}
		// Spans at offsets of b, as the callers hold them.
		for i := range spans {
			spans[i].start -= base
			spans[i].end -= base
		}
		lo, hi := min(int(from), len(b)), min(int(to), len(b))
		if lo > hi {
			lo, hi = hi, lo
		}
		out := masked(b, lo, hi, spans)
		for _, s := range spans {
			if s.start >= lo && s.end <= hi && s.end-s.start > 8 && bytes.Contains(out, b[s.start:s.end]) && !bytes.Contains(b[lo:s.start], b[s.start:s.end]) && !bytes.Contains(b[s.end:hi], b[s.start:s.end]) {
				t.Fatalf("%q [%d, %d): %q still holds %q", b, lo, hi, out, b[s.start:s.end])
			}
		}
		if len(spans) > 0 {
			maskNestedEncoded(b)
		}
	})
}
