package agent

import (
	"bytes"
	"reflect"
	"testing"

	"github.com/rookhq/rook/cas"
)

// A source line's head written in any pieces is taken whole once its last
// byte comes, with the rest after it; bytes that never make a head are
// given up on once they are longer than any head.
func TestSourceHeadTakesPiecesAndGivesUp(t *testing.T) {
	sl := sourceLine{Offset: 12345, Rest: []byte(`{"a":"","b":""}`)}
	sl.Cuts = []lineCut{{Gap: 6, ID: cas.Key{1, 2, 3}}, {Gap: 7, ID: cas.Key{4, 5}}}
	obj := sl.encode()
	headLen := len(sl.appendHead(nil))
	for _, piece := range []int{1, 3, 7, headLen, len(obj)} {
		var h sourceHead
		var got sourceLine
		var gotLen int
		var rest []byte
		done := false
		for at := 0; at < len(obj); at += piece {
			p := obj[at:min(at+piece, len(obj))]
			if done {
				rest = append(rest, p...)
				continue
			}
			var over bool
			var r []byte
			got, gotLen, r, done, over = h.take(p)
			if over {
				t.Fatalf("pieces of %d: gave up on a good head", piece)
			}
			if done {
				if at+len(p) < headLen {
					t.Fatalf("pieces of %d: done after %d bytes, the head has %d", piece, at+len(p), headLen)
				}
				rest = append(rest, r...)
			}
		}
		if !done || gotLen != headLen {
			t.Fatalf("pieces of %d: done %v, head %d bytes, want %d", piece, done, gotLen, headLen)
		}
		got.Rest = rest
		if !reflect.DeepEqual(got, sl) {
			t.Fatalf("pieces of %d: took %+v, want %+v", piece, got, sl)
		}
	}

	var h sourceHead
	junk := bytes.Repeat([]byte{0xff}, 64)
	for written := 0; ; written += len(junk) {
		if written > 2*sourceLineHeadMax(maxCuts) {
			t.Fatalf("still gathering after %d bytes of junk", written)
		}
		_, _, _, done, over := h.take(junk)
		if done {
			t.Fatal("junk taken as a head")
		}
		if over {
			if written+len(junk) <= sourceLineHeadMax(maxCuts) {
				t.Fatalf("gave up after %d bytes, a head may have %d", written+len(junk), sourceLineHeadMax(maxCuts))
			}
			break
		}
	}
}
