package agent

import (
	"bytes"
	"encoding/base64"
	"image"
	"image/jpeg"
	"image/png"
	"math/rand"
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
