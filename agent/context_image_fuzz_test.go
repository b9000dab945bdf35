package agent

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"hash/crc32"
	"image"
	"image/color"
	"image/gif"
	"strings"
	"testing"
)

// pngHeader is the head of a PNG declaring w×h pixels (its signature and
// IHDR chunk, checksum and all), none of its pixels: what a crafted file
// claims.
func pngHeader(w, h uint32) []byte {
	ihdr := binary.BigEndian.AppendUint32([]byte("IHDR"), w)
	ihdr = binary.BigEndian.AppendUint32(ihdr, h)
	ihdr = append(ihdr, 8, 6, 0, 0, 0) // 8-bit RGBA, no interlace
	b := []byte("\x89PNG\r\n\x1a\n")
	b = binary.BigEndian.AppendUint32(b, uint32(len(ihdr)-4))
	b = append(b, ihdr...)
	return binary.BigEndian.AppendUint32(b, crc32.ChecksumIEEE(ihdr))
}

// jpegHeader is the head of a baseline JPEG declaring w×h pixels (SOI, a
// SOF0 of one component), none of its scan.
func jpegHeader(w, h uint16) []byte {
	b := []byte{0xff, 0xd8, 0xff, 0xc0, 0, 11, 8}
	b = binary.BigEndian.AppendUint16(b, h)
	b = binary.BigEndian.AppendUint16(b, w)
	return append(b, 1, 1, 0x11, 0)
}

// gifHeader is the head of a GIF declaring a w×h screen and a w×h frame.
func gifHeader(w, h uint16) []byte {
	b := []byte("GIF89a")
	b = binary.LittleEndian.AppendUint16(b, w)
	b = binary.LittleEndian.AppendUint16(b, h)
	b = append(b, 0, 0, 0, 0x2c, 0, 0, 0, 0)
	b = binary.LittleEndian.AppendUint16(b, w)
	b = binary.LittleEndian.AppendUint16(b, h)
	return append(b, 0, 2, 2, 0x4c, 0x01, 0, 0x3b)
}

// The image header reader takes base64 from transcripts, untrusted: a
// crafted header (dimensions of 2^31 pixels a side, a JPEG's largest,
// a header cut short, base64 broken by newlines or of the URL-safe
// alphabet, a data URL with parameters, a WebP's chunk of each kind)
// never panics, and whatever it
// declares an image counts at least 1 token and at most the fallback's
// (the provider scales every image down to 1.15 MP: 1534).
func FuzzStringImageTokens(f *testing.F) {
	var small bytes.Buffer
	if err := gif.Encode(&small, image.NewPaletted(image.Rect(0, 0, 3, 2), color.Palette{color.Black, color.White}), nil); err != nil {
		f.Fatal(err)
	}
	for _, raw := range [][]byte{
		small.Bytes(),
		pngHeader(300, 200), pngHeader(1<<31-1, 1<<31-1), pngHeader(0, 5), pngHeader(1, 1),
		jpegHeader(3000, 2000), jpegHeader(65535, 65535), jpegHeader(0, 0),
		gifHeader(65535, 65535), gifHeader(1, 65535),
		pngHeader(300, 200)[:20], jpegHeader(3000, 2000)[:9],
		[]byte("RIFF\x00\x00\x00\x00WEBPVP8 "),
		webpHead("VP8 ", 300, 200), webpHead("VP8L", 16384, 16384), webpHead("VP8X", 1<<24, 1<<24),
		webpHead("VP8X", 4000, 3000)[:26], webpHead("VP8L", 0, 0), webpHead("ALPH", 1, 1),
	} {
		b64 := base64.StdEncoding.EncodeToString(raw)
		f.Add([]byte(b64))
		f.Add([]byte("data:image/png;base64," + b64))
		f.Add([]byte("data:image/png;name=a.png;charset=x;base64," + b64))
		f.Add([]byte(b64[:len(b64)/2] + "\n" + b64[len(b64)/2:]))
		f.Add([]byte(base64.URLEncoding.EncodeToString(raw)))
	}
	f.Add([]byte("data:image/png,not base64"))
	f.Add([]byte("iVBORw0KGgo"))
	// restImages reads a source line's rest: strings at image keys,
	// escaped ones, JSON in strings, quotes that do not close.
	png := base64.StdEncoding.EncodeToString(pngHeader(300, 200))
	f.Add([]byte(`{"data":"` + strings.ReplaceAll(png, "/", `\/`) + `"}`))
	f.Add([]byte(`{"output":"{\"content\":[{\"type\":\"image\",\"data\":\"` + png + `\"}]}"}`))
	f.Add([]byte(`["data:image/png;base64,` + png + `", "iVBOR`))
	f.Add([]byte(`{"data":"iVBORw0KGgo\`))
	f.Fuzz(func(t *testing.T, text []byte) {
		tokens, ok := stringImageTokens(text)
		if ok && (tokens < 1 || tokens > imageFallbackTokens) {
			t.Fatalf("%q counts %d tokens as an image, want 1 to %d", text, tokens, imageFallbackTokens)
		}
		if !ok && tokens != 0 {
			t.Fatalf("%q is no image but counts %d", text, tokens)
		}
		if c := restImages(text); c.bytes < 0 || c.bytes > int64(len(text)) || c.tokens < 0 || c.bytes == 0 && c.tokens != 0 {
			t.Fatalf("the rest %q holds images of %d bytes counting %d tokens", text, c.bytes, c.tokens)
		}
	})
}
