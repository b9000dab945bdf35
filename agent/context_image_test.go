package agent

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"image"
	"image/jpeg"
	"image/png"
	"math/rand"
	"strings"
	"testing"

	"github.com/rookhq/rook/eventlog"
	"github.com/rookhq/rook/internal/vfs"
)

// noisyImage is an image of w×h pixels of noise: one that compresses
// badly, as a screenshot's base64 is long.
func noisyImage(w, h int) image.Image {
	rng := rand.New(rand.NewSource(int64(w*h + 1)))
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	for i := range img.Pix {
		img.Pix[i] = byte(rng.Intn(256))
	}
	return img
}

func pngBase64(t *testing.T, img image.Image) string {
	t.Helper()
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		t.Fatal(err)
	}
	return base64.StdEncoding.EncodeToString(b.Bytes())
}

func jpegBase64(t *testing.T, img image.Image) string {
	t.Helper()
	var b bytes.Buffer
	if err := jpeg.Encode(&b, img, &jpeg.Options{Quality: 90}); err != nil {
		t.Fatal(err)
	}
	return base64.StdEncoding.EncodeToString(b.Bytes())
}

// TestContextCountsImagesByTheirPixels: an image in an imported line (a
// pasted screenshot's image block, the image a Read returned, a Codex
// input_image's data URL) counted as a quarter of its base64 bytes: a
// 300×200 PNG of ~320 KB base64 read as ~80K tokens. It counts what the
// provider counts, width×height/750 (80 tokens), and the rest of the line
// as before.
func TestContextCountsImagesByTheirPixels(t *testing.T) {
	pngB64 := pngBase64(t, noisyImage(300, 200))                          // 300*200/750 = 80 tokens
	jpegB64 := jpegBase64(t, image.NewGray(image.Rect(0, 0, 3000, 2000))) // scaled to 1.15 MP: 1534
	t.Logf("png base64 %d bytes, jpeg base64 %d bytes", len(pngB64), len(jpegB64))

	t.Run("claude-code", func(t *testing.T) {
		fsys := vfs.NewMem()
		r := testRook(t, fsys)
		src := "/p/s.jsonl"
		lines := []string{
			`{"type":"user","sessionId":"s","message":{"role":"user","content":[{"type":"text","text":"what is on this screen?"},{"type":"image","source":{"type":"base64","media_type":"image/png","data":"` + pngB64 + `"}}]}}`,
			`{"type":"assistant","sessionId":"s","message":{"model":"m","id":"msg_a","content":[{"type":"tool_use","id":"t1","name":"Read","input":{"file_path":"/w/big.jpg"}}],"usage":{"input_tokens":3,"output_tokens":5}}}`,
			`{"type":"user","sessionId":"s","message":{"role":"user","content":[{"tool_use_id":"t1","type":"tool_result","content":[{"type":"image","source":{"type":"base64","data":"` + jpegB64 + `","media_type":"image/jpeg"}}]}]},"toolUseResult":{"type":"image","file":{"base64":"` + jpegB64 + `","type":"image/jpeg","originalSize":12345}}}`,
		}
		writeSource(t, fsys, src, lines, "")
		id := *fileByPath(t, mustImport(t, r, FormatClaudeCode, src), src).Session
		rep, err := r.Context(id, DefaultContextWindow)
		if err != nil {
			t.Fatal(err)
		}
		byKind := map[eventlog.Kind]ContextKind{}
		for _, k := range rep.Kinds {
			byKind[k.Kind] = k
		}
		// The line without its image: ~200 bytes, ~50 tokens.
		if k := byKind[eventlog.KindUser]; k.Tokens < 80 || k.Tokens > 80+100 {
			t.Errorf("the prompt with a 300×200 PNG counts %d tokens (%d bytes), want 80 for the image and the line's few", k.Tokens, k.Bytes)
		}
		// The JPEG twice on its line (the message, toolUseResult) is one
		// string, counted once.
		if k := byKind[eventlog.KindToolResult]; k.Tokens < 1534 || k.Tokens > 1534+150 {
			t.Errorf("the Read of a 3000×2000 JPEG counts %d tokens (%d bytes), want 1534 for the image and the line's few", k.Tokens, k.Bytes)
		}
		if k := byKind[eventlog.KindUser]; k.Bytes < int64(len(pngB64)) {
			t.Errorf("the prompt's bytes %d leave out its image's %d: the bytes are as stored", k.Bytes, len(pngB64))
		}
	})

	t.Run("codex", func(t *testing.T) {
		fsys := vfs.NewMem()
		r := testRook(t, fsys)
		lines := []string{
			`{"timestamp":"2026-01-07T08:30:00.000Z","type":"session_meta","payload":{"id":"019b8a10-1111-7222-8333-944455566602","timestamp":"2026-01-07T08:30:00.000Z","cwd":"/w","originator":"codex_cli_rs","cli_version":"0.80.0"}}`,
			`{"timestamp":"2026-01-07T08:30:01.000Z","type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"what is on this screen?"},{"type":"input_image","image_url":"data:image/png;base64,` + pngB64 + `"}]}}`,
		}
		writeSource(t, fsys, "/c/rollout-2026-01-07T08-30-00-019b8a10-1111-7222-8333-944455566602.jsonl", lines, "")
		id := *mustImport(t, r, FormatCodex, "/c").Files[0].Session
		rep, err := r.Context(id, DefaultContextWindow)
		if err != nil {
			t.Fatal(err)
		}
		for _, k := range rep.Kinds {
			if k.Kind == eventlog.KindUser && (k.Tokens < 80 || k.Tokens > 80+100) {
				t.Errorf("the prompt with a 300×200 PNG data URL counts %d tokens (%d bytes), want 80 for the image and the line's few", k.Tokens, k.Bytes)
			}
		}
	})
}

// TestImageTokens: width×height/750 after the provider's scaling down to
// at most 1568 pixels on the long edge and 1.15 megapixels.
func TestImageTokens(t *testing.T) {
	for _, c := range []struct {
		w, h int
		want int64
	}{
		{300, 200, 80},
		{1000, 1000, 1334}, // 1e6/750, rounded up: under both limits
		{1568, 700, 1464},  // at the edge limit, under 1.15 MP
		{3000, 2000, 1534}, // scaled to 1.15 MP
		{4000, 100, 82},    // scaled to 1568 on its long edge: 1568×39.2
		{0, 10, imageFallbackTokens},
	} {
		if got := imageTokens(c.w, c.h); got != c.want {
			t.Errorf("imageTokens(%d, %d) = %d, want %d", c.w, c.h, got, c.want)
		}
	}
	// A WebP (no decoder here) or a header that does not read: the
	// fallback, still an image.
	if got, ok := stringImageTokens([]byte("UklGR" + base64.StdEncoding.EncodeToString(make([]byte, 300)))); !ok || got != imageFallbackTokens {
		t.Errorf("a WebP counts %d, %v; want %d", got, ok, imageFallbackTokens)
	}
	if _, ok := stringImageTokens([]byte(base64.StdEncoding.EncodeToString([]byte("some text, not an image, long enough")))); ok {
		t.Error("base64 of text taken for an image")
	}
}

// webpHead is the head of a WebP file of w×h pixels with a first chunk of
// the given kind ("VP8 ", "VP8L", "VP8X"), as the container spec lays
// them out; none of its pixels.
func webpHead(kind string, w, h int) []byte {
	data := make([]byte, 10)
	switch kind {
	case "VP8X":
		data[0] = 0x10 // alpha
		data[4], data[5], data[6] = byte(w-1), byte((w-1)>>8), byte((w-1)>>16)
		data[7], data[8], data[9] = byte(h-1), byte((h-1)>>8), byte((h-1)>>16)
	case "VP8L":
		data[0] = 0x2f
		binary.LittleEndian.PutUint32(data[1:], uint32(w-1)|uint32(h-1)<<14)
	case "VP8 ":
		data[0], data[1], data[2] = 0x50, 0x2f, 0x00 // a key frame's tag
		data[3], data[4], data[5] = 0x9d, 0x01, 0x2a
		binary.LittleEndian.PutUint16(data[6:], uint16(w))
		binary.LittleEndian.PutUint16(data[8:], uint16(h))
	}
	b := append([]byte("RIFF\x00\x10\x00\x00WEBP"+kind), 0, 0x10, 0, 0)
	return append(b, data...)
}

// TestWebPTokens: a WebP counted a fixed 1600 tokens, whatever its size;
// its size is read off its first chunk, of each of the three kinds, as
// a PNG's is.
func TestWebPTokens(t *testing.T) {
	for _, c := range []struct {
		kind string
		w, h int
	}{
		{"VP8 ", 300, 200}, {"VP8L", 300, 200}, {"VP8X", 300, 200},
		{"VP8X", 4000, 3000}, {"VP8L", 16384, 16384}, {"VP8 ", 1, 1},
	} {
		b64 := base64.StdEncoding.EncodeToString(webpHead(c.kind, c.w, c.h))
		for _, text := range []string{b64, "data:image/webp;base64," + b64} {
			got, ok := stringImageTokens([]byte(text))
			if want := imageTokens(c.w, c.h); !ok || got != want {
				t.Errorf("a %q WebP of %d×%d counts %d, %v; want %d", c.kind, c.w, c.h, got, ok, want)
			}
		}
	}
	// A head that is not one of the three, or cut short: still an
	// image, at the fallback.
	for _, raw := range [][]byte{webpHead("ALPH", 3, 3), webpHead("VP8X", 300, 200)[:25], []byte("RIFF\x00\x00\x00\x00WEBPVP8 ")} {
		if got, ok := stringImageTokens([]byte(base64.StdEncoding.EncodeToString(raw))); !ok || got != imageFallbackTokens {
			t.Errorf("%q counts %d, %v; want %d", raw, got, ok, imageFallbackTokens)
		}
	}
}

// TestContextCountsImagesOtherPathsMissed: images the import leaves in a
// line instead of cutting them out (shorter than MinCutString, or base64
// written with "\/" for '/', which a cut could not give back byte for
// byte), and an image inside a Codex tool's output string (an MCP
// screenshot: {"content":[{"type":"image","data":...}]} as JSON text)
// counted a quarter of their base64 bytes: the escaped 300×200 PNG as
// ~80K tokens. They count by their pixels.
func TestContextCountsImagesOtherPathsMissed(t *testing.T) {
	pngB64 := pngBase64(t, noisyImage(300, 200)) // 80 tokens
	escaped := strings.ReplaceAll(pngB64, "/", `\/`)
	if escaped == pngB64 {
		t.Fatal("the PNG's base64 has no '/' to escape")
	}
	const tolerance = 150 // the lines' own few tokens

	t.Run("claude-code-escaped", func(t *testing.T) {
		fsys := vfs.NewMem()
		r := testRook(t, fsys)
		src := "/p/s.jsonl"
		writeSource(t, fsys, src, []string{
			`{"type":"user","sessionId":"s","message":{"role":"user","content":[{"type":"text","text":"what is on this screen?"},{"type":"image","source":{"type":"base64","media_type":"image/png","data":"` + escaped + `"}}]}}`,
		}, "")
		id := *fileByPath(t, mustImport(t, r, FormatClaudeCode, src), src).Session
		rep, err := r.Context(id, DefaultContextWindow)
		if err != nil {
			t.Fatal(err)
		}
		if rep.EverTokens < 80 || rep.EverTokens > 80+tolerance {
			t.Errorf("a prompt with a 300×200 PNG written with \\/ counts %d tokens (%d bytes), want 80 for the image and the line's few", rep.EverTokens, rep.EverBytes)
		}
	})

	t.Run("codex-tool-output", func(t *testing.T) {
		fsys := vfs.NewMem()
		r := testRook(t, fsys)
		lines := []string{
			`{"timestamp":"2026-01-07T08:30:00.000Z","type":"session_meta","payload":{"id":"019b8a10-1111-7222-8333-944455566603","timestamp":"2026-01-07T08:30:00.000Z","cwd":"/w","originator":"codex_cli_rs","cli_version":"0.80.0"}}`,
			`{"timestamp":"2026-01-07T08:30:01.000Z","type":"response_item","payload":{"type":"function_call_output","call_id":"c1","output":"{\"content\":[{\"type\":\"image\",\"data\":\"` + pngB64 + `\",\"mimeType\":\"image/png\"},{\"type\":\"text\",\"text\":\"data:image/png;base64,` + pngB64 + `\"}],\"isError\":false}"}}`,
		}
		writeSource(t, fsys, "/c/rollout-2026-01-07T08-30-00-019b8a10-1111-7222-8333-944455566603.jsonl", lines, "")
		id := *mustImport(t, r, FormatCodex, "/c").Files[0].Session
		rep, err := r.Context(id, DefaultContextWindow)
		if err != nil {
			t.Fatal(err)
		}
		for _, k := range rep.Kinds {
			if k.Kind == eventlog.KindToolResult && (k.Tokens < 2*80 || k.Tokens > 2*80+tolerance) {
				t.Errorf("an MCP output with a 300×200 PNG and its data URL counts %d tokens (%d bytes), want 160 for the images and the line's few", k.Tokens, k.Bytes)
			}
		}
	})

	// Tiny: a 2×2 PNG under MinCutString, in the line itself, and one in
	// a short tool output's JSON text.
	tiny := pngBase64(t, noisyImage(2, 2))
	if len(tiny) >= MinCutString {
		t.Fatalf("the 2×2 PNG's base64 is %d bytes, not tiny", len(tiny))
	}
	for _, rest := range []string{
		`{"type":"image","source":{"type":"base64","data":"` + tiny + `"}}`,
		`{"type":"image","source":{"type":"base64","data":"` + strings.ReplaceAll(tiny, "/", `\/`) + `"}}`,
		`{"payload":{"type":"function_call_output","output":"{\"content\":[{\"type\":\"image\",\"data\":\"` + tiny + `\"}]}"}}`,
		`{"content":[{"type":"input_image","image_url":"data:image/png;base64,` + tiny + `"}]}`,
	} {
		if got := restImages([]byte(rest)); got.tokens != 1 || got.bytes != int64(len(tiny))+2 && got.bytes != int64(len(strings.ReplaceAll(tiny, "/", `\/`)))+2 && got.bytes != int64(len("data:image/png;base64,")+len(tiny))+2 {
			t.Errorf("restImages(%s) = %+v, want the 2×2 PNG's 1 token", rest, got)
		}
	}
	if got := restImages([]byte(`{"text":"iVBORw0KGgo is how a PNG's base64 begins","data":"R0lGOD"}`)); got != (imageCount{}) {
		t.Errorf("text mentioning a PNG counts as images: %+v", got)
	}
}
