package agent

import (
	"bytes"
	"encoding/base64"
	"image"
	_ "image/gif" // image.DecodeConfig reads the headers of these formats
	_ "image/jpeg"
	_ "image/png"
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
	// read counts (a WebP, which Go's image packages do not read, or
	// bytes that do not decode): about the most one counts once scaled
	// down (1.15 MP / 750 ≈ 1534), an estimate that errs high.
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

// mayBeImage says whether a string cut out of a line at rest[:at] sits
// where a transcript puts an image: only those are read to be told apart.
func mayBeImage(rest []byte, at int) bool {
	key, element := cutKey(rest, at)
	return element || imageKeys[key]
}

// stringImageTokens is the token count of an image a cut string is (its
// decoded text: base64 of a PNG, JPEG, GIF or WebP file, or a data URL of
// an image), and false when it is not one.
func stringImageTokens(text []byte) (int64, bool) {
	payload := text
	if i := dataURLPayload(text); i > 0 {
		if !bytes.HasPrefix(text, []byte("data:image/")) {
			return 0, false
		}
		payload = text[i:]
	} else if !isImageBase64(text) || !isBase64(text) {
		return 0, false
	}
	// DecodeConfig reads the header only: the few bytes of base64 before
	// the dimensions are decoded, not the image.
	cfg, _, err := image.DecodeConfig(base64.NewDecoder(base64.StdEncoding, bytes.NewReader(payload)))
	if err != nil {
		return imageFallbackTokens, true
	}
	return imageTokens(cfg.Width, cfg.Height), true
}

// cutImageTokens is stringImageTokens of the string the store keeps as
// id, read once per Context call (images[id]; -1: not an image); false
// when it is not an image, or does not read (sourceLinesSize counts it at
// its size then).
func (r *Rook) cutImageTokens(id cas.Key, images map[cas.Key]int64) (int64, bool) {
	if t, ok := images[id]; ok {
		return t, t >= 0
	}
	text, err := r.Store.Get(id)
	if err != nil {
		return 0, false
	}
	t, ok := stringImageTokens(text)
	if !ok {
		t = -1
	}
	images[id] = t
	return t, ok
}
