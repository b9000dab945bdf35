package agent

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"image"
	_ "image/gif" // image.DecodeConfig reads the headers of these formats
	_ "image/jpeg"
	_ "image/png"
	"io"
	"math"

	"github.com/rookhq/rook/cas"
)

// Images in context. A transcript carries an image as base64 (a Claude
// Code image block's source data, the base64 of an image a Read returned,
// a Codex input_image's data URL), but a model reads it as pixels, not
// as text: counted at a quarter of its base64 bytes, one 1 MB screenshot
// read as ~330K tokens, over any window. Context counts an image the way
// the provider does instead (imageTokens), from the dimensions its header
// gives.

// The size Anthropic scales an image down to, keeping its aspect, before
// it counts it: at most 1568 pixels on the long edge and 1.15 megapixels.
const (
	imageMaxEdge   = 1568
	imageMaxPixels = 1.15e6
	// imagePixelsPerToken: an image counts width×height/750 tokens.
	imagePixelsPerToken = 750
	// imageFallbackTokens is what an image whose dimensions cannot be
	// read counts (bytes that do not decode, a header cut short): about
	// the most one counts once scaled down (1.15 MP / 750 ≈ 1534), an
	// estimate that errs high.
	imageFallbackTokens = 1600
)

// imageTokens is the token count of an image of w×h pixels: width ×
// height / 750, after scaling it down to the largest size the provider
// takes; imageFallbackTokens for a size that is none.
func imageTokens(w, h int) int64 {
	if w <= 0 || h <= 0 {
		return imageFallbackTokens
	}
	scale := min(1, float64(imageMaxEdge)/float64(max(w, h)))
	if px := float64(w) * float64(h) * scale * scale; px > imageMaxPixels {
		scale *= math.Sqrt(imageMaxPixels / px)
	}
	return int64(math.Ceil(float64(w) * float64(h) * scale * scale / imagePixelsPerToken))
}

// imageKeys are the keys an image's base64 sits under in a line: a
// Claude Code image block's source "data", its Read result's file
// "base64", a Codex input_image's "image_url"; a Codex user_message's
// "images" are array elements (cutKey's element).
var imageKeys = map[string]bool{"data": true, "base64": true, "image_url": true}

// cutKey is the key of the value a string cut out of a line is, read off
// rest[:at], the line's bytes before it: element is true when the string
// is an array's element instead; both are empty when the bytes say
// neither.
func cutKey(rest []byte, at int) (key string, element bool) {
	b := bytes.TrimRight(rest[:at], " \t\r\n")
	if len(b) == 0 {
		return "", false
	}
	switch b[len(b)-1] {
	case '[', ',':
		return "", true
	case ':':
	default:
		return "", false
	}
	b = bytes.TrimRight(b[:len(b)-1], " \t\r\n")
	if len(b) < 2 || b[len(b)-1] != '"' {
		return "", false
	}
	i := bytes.LastIndexByte(b[:len(b)-1], '"')
	if i < 0 {
		return "", false
	}
	return string(b[i+1 : len(b)-1]), false
}

// mayBeImage says whether a string at rest[:at] of a line (cut out of it,
// or kept) sits where a transcript puts an image: only those are read to
// be told apart.
func mayBeImage(rest []byte, at int) bool {
	key, element := cutKey(rest, at)
	return element || imageKeys[key]
}

// stringImageTokens is the token count of an image a cut string is (its
// decoded text: base64 of a PNG, JPEG, GIF or WebP file, or a data URL of
// an image), and false when it is not one.
func stringImageTokens(text []byte) (int64, bool) {
	t, isImage, _ := stringImage(text)
	return t, isImage
}

// stringImage is stringImageTokens, and whether the image's size read
// (sized: its tokens are not the fallback's).
func stringImage(text []byte) (tokens int64, isImage, sized bool) {
	payload := text
	if i := dataURLPayload(text); i > 0 {
		if !bytes.HasPrefix(text, []byte("data:image/")) {
			return 0, false, false
		}
		payload = text[i:]
	} else if !isImageBase64(text) || !isBase64(text) {
		return 0, false, false
	}
	w, h, err := imageSize(base64.NewDecoder(base64.StdEncoding, bytes.NewReader(payload)))
	if err != nil {
		return imageFallbackTokens, true, false
	}
	return imageTokens(w, h), true, w > 0 && h > 0
}

// imageSize reads the dimensions off an image file's header: the few
// bytes of base64 before them are decoded, not the image. A WebP, which
// Go's image packages do not read, by webpSize.
func imageSize(r io.Reader) (w, h int, err error) {
	head := make([]byte, webpHeadLen)
	n, err := io.ReadFull(r, head)
	if err != nil && err != io.ErrUnexpectedEOF {
		return 0, 0, err
	}
	head = head[:n]
	if bytes.HasPrefix(head, []byte("RIFF")) {
		return webpSize(head)
	}
	cfg, _, err := image.DecodeConfig(io.MultiReader(bytes.NewReader(head), r))
	return cfg.Width, cfg.Height, err
}

// webpHeadLen is how many bytes of a WebP file give its size: the RIFF
// header (12), the first chunk's header (8) and the 10 bytes of it that
// hold the size in each of its three kinds.
const webpHeadLen = 30

var errNotWebP = errors.New("not a WebP header")

// webpSize reads the canvas size off a WebP file's head, from its first
// chunk: VP8X (extended: 24-bit width-1 and height-1 after 4 bytes of
// flags), VP8L (lossless: a 0x2f signature, then 14-bit width-1 and
// height-1) or "VP8 " (lossy: a 3-byte frame tag, the start code 9d 01
// 2a, then 14-bit width and height), as the WebP container spec lays
// them out.
func webpSize(head []byte) (w, h int, err error) {
	if len(head) < webpHeadLen || string(head[0:4]) != "RIFF" || string(head[8:12]) != "WEBP" {
		return 0, 0, errNotWebP
	}
	data := head[20:]
	switch string(head[12:16]) {
	case "VP8X":
		w = 1 + uint24(data[4:7])
		h = 1 + uint24(data[7:10])
	case "VP8L":
		if data[0] != 0x2f {
			return 0, 0, errNotWebP
		}
		bits := binary.LittleEndian.Uint32(data[1:5])
		w = 1 + int(bits&0x3fff)
		h = 1 + int(bits>>14&0x3fff)
	case "VP8 ":
		if data[3] != 0x9d || data[4] != 0x01 || data[5] != 0x2a {
			return 0, 0, errNotWebP
		}
		w = int(binary.LittleEndian.Uint16(data[6:8]) & 0x3fff)
		h = int(binary.LittleEndian.Uint16(data[8:10]) & 0x3fff)
	default:
		return 0, 0, errNotWebP
	}
	return w, h, nil
}

// uint24 is a little-endian 24-bit number.
func uint24(b []byte) int {
	return int(b[0]) | int(b[1])<<8 | int(b[2])<<16
}

// imageCount is what the images in a string, or in a line's rest, are:
// the bytes of their strings (counted as text, a quarter each, they would
// say too much) and the tokens they count instead.
type imageCount struct {
	bytes, tokens int64
}

func (c *imageCount) add(o imageCount) {
	c.bytes += o.bytes
	c.tokens += o.tokens
}

// outputKeys are the keys of the strings a tool's output is written in as
// JSON text, where an image sits inside (Codex's MCP results:
// {"content":[{"type":"image","data":"iVBOR…"}]} in a function_call_output's
// "output"): they are read to find it.
var outputKeys = map[string]bool{"output": true}

// minOutputWithImages is the size of the shortest tool output read for
// the images in it: a screenshot's base64 is hundreds of KiB, and an
// output of 32 KiB or less, image or not, counts at most ~8K tokens as
// text. Reading every output made Context of the generated Codex
// rollouts (14 sessions, 15 MB) ~1.5x as slow; reading only these, about
// as fast as before.
const minOutputWithImages = 32 << 10

// cutImages is what the images in the string the store keeps as id count:
// the string whole when it sits where an image does (whole), else the
// images in the JSON written in it when it is a tool's output (a string
// under one of outputKeys) of more than minOutputWithImages bytes (size).
// It is read once per Context call (images, by string); false when it
// holds none or does not read (sourceLinesSize counts it at its size
// then).
func (r *Rook) cutImages(id cas.Key, size int64, rest []byte, at int, images map[cas.Key]imageCount) (imageCount, bool) {
	key, element := cutKey(rest, at)
	whole := element || imageKeys[key]
	if !whole && (!outputKeys[key] || size <= minOutputWithImages) {
		return imageCount{}, false
	}
	if c, ok := images[id]; ok {
		return c, c.bytes > 0
	}
	text, err := r.Store.Get(id)
	if err != nil {
		return imageCount{}, false
	}
	var c imageCount
	if whole {
		if t, ok := stringImageTokens(text); ok {
			c = imageCount{int64(len(text)) + 2, t}
		}
	} else {
		c = nestedImages(text, plainQuote)
	}
	images[id] = c
	return c, c.bytes > 0
}

// nestedImages is what the images in JSON written inside a string count
// (appendNestedEncoded finds them: base64 under "data" or "base64", data
// URLs), b the string as text (plainQuote) or as a line has it
// (escapedQuote).
func nestedImages(b []byte, q string) imageCount {
	var c imageCount
	for _, s := range appendNestedEncoded(nil, b, q, 0) {
		if t, ok := stringImageTokens(b[s.start:s.end]); ok {
			c.add(imageCount{int64(s.end-s.start) + 2, t})
		}
	}
	return c
}

// restImages is what the images a source line kept in its rest count:
// the strings the import did not cut out, shorter than MinCutString or
// written with "\/" for '/' (a cut must give the line back byte for
// byte, and JSON.stringify writes '/' as is), that sit where an image
// does and whose size reads; and images in JSON written inside its
// strings (a short tool output). The rest is the line with whole string
// literals cut out, so its quotes still pair.
func restImages(rest []byte) imageCount {
	var c imageCount
	for i := 0; i < len(rest); {
		j := bytes.IndexByte(rest[i:], '"')
		if j < 0 {
			break
		}
		start := i + j
		end := start + 1 + jsonStringLen(rest[start+1:])
		if end >= len(rest) {
			break // not closed: not JSON
		}
		content := rest[start+1 : end]
		if looksLikeImage(content) && mayBeImage(rest, start) {
			// A string kept in the line is often short: one whose
			// size does not read is taken for text ("R0lGOD" under
			// "data" is a word, and a quarter of a short string is
			// less than the fallback).
			if t, _, sized := stringImage(unescapeSlashes(content)); sized {
				c.add(imageCount{int64(len(content)) + 2, t})
			}
		} else if bytes.Contains(content, []byte(escapedQuote)) {
			c.add(nestedImages(content, escapedQuote))
		}
		i = end + 1
	}
	return c
}

// looksLikeImage says whether a JSON string's content begins as an
// image's base64 or data URL does: the strings worth a closer look.
func looksLikeImage(b []byte) bool {
	return isImageBase64(b) || bytes.HasPrefix(b, []byte("data:image/"))
}

// jsonStringLen is the length of the content of the JSON string literal
// b begins inside of (after its opening quote): up to its closing quote,
// or len(b) when it has none.
func jsonStringLen(b []byte) int {
	for i := 0; i < len(b); i++ {
		switch b[i] {
		case '\\':
			i++
		case '"':
			return i
		}
	}
	return len(b)
}

// unescapeSlashes is base64 as a JSON string may write it, with "\/" for
// '/', as base64.
func unescapeSlashes(b []byte) []byte {
	if bytes.IndexByte(b, '\\') < 0 {
		return b
	}
	return bytes.ReplaceAll(b, []byte(`\/`), []byte("/"))
}
