package eventlog

import (
	"bytes"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"
)

// ID is a session id: a ULID. Its 16 bytes are a 48-bit millisecond
// timestamp and 80 random bits, big-endian, so ids sort by creation time; its
// text form is 26 characters of Crockford base32.
type ID [16]byte

const crockford = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"

// String is the 26-character ULID text.
func (id ID) String() string {
	// 128 bits as 26 base32 digits: the first digit carries 3 bits.
	var out [26]byte
	hi := binary.BigEndian.Uint64(id[:8])
	lo := binary.BigEndian.Uint64(id[8:])
	for i := 25; i >= 0; i-- {
		out[i] = crockford[lo&31]
		lo = lo>>5 | hi<<59
		hi >>= 5
	}
	return string(out[:])
}

// Compare orders ids as their text does (-1, 0, +1), without making it:
// the text is the bytes big-endian in digits that sort as they count, so
// the bytes order the same. For sorts of thousands of ids.
func (id ID) Compare(other ID) int { return bytes.Compare(id[:], other[:]) }

// Short is the first 10 characters (the millisecond timestamp), enough to
// tell sessions apart in listings; prefixes resolve like object ids.
func (id ID) Short() string { return id.String()[:10] }

// Time is when the id was made.
func (id ID) Time() time.Time {
	ms := binary.BigEndian.Uint64(append([]byte{0, 0}, id[:6]...))
	return time.UnixMilli(int64(ms)).UTC()
}

// IsZero reports whether id is the zero id.
func (id ID) IsZero() bool { return id == ID{} }

// MarshalText makes ids JSON strings.
func (id ID) MarshalText() ([]byte, error) { return []byte(id.String()), nil }

// UnmarshalText parses a ULID string.
func (id *ID) UnmarshalText(b []byte) error {
	v, err := ParseID(string(b))
	if err != nil {
		return err
	}
	*id = v
	return nil
}

var errBadID = errors.New("not a session id")

func crockfordValue(c byte) (uint64, bool) {
	c = strings.ToUpper(string(c))[0]
	switch c {
	case 'O':
		c = '0'
	case 'I', 'L':
		c = '1'
	}
	i := strings.IndexByte(crockford, c)
	return uint64(i), i >= 0
}

// ParseID reads a 26-character ULID (case-insensitive).
func ParseID(s string) (ID, error) {
	var id ID
	if len(s) != 26 {
		return id, fmt.Errorf("%w: %q is not 26 characters", errBadID, s)
	}
	var hi, lo uint64
	for i := 0; i < 26; i++ {
		v, ok := crockfordValue(s[i])
		if !ok {
			return id, fmt.Errorf("%w: %q has %q", errBadID, s, s[i])
		}
		if i == 0 && v > 7 {
			return id, fmt.Errorf("%w: %q overflows 128 bits", errBadID, s)
		}
		hi = hi<<5 | lo>>59
		lo = lo<<5 | v
	}
	binary.BigEndian.PutUint64(id[:8], hi)
	binary.BigEndian.PutUint64(id[8:], lo)
	return id, nil
}

// idGen makes ids that are unique and increasing within this process even
// when the clock repeats a millisecond (or steps back): the random part is
// incremented instead.
type idGen struct {
	mu   sync.Mutex
	last ID
}

func (g *idGen) next(now time.Time) (ID, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	var id ID
	ms := uint64(now.UnixMilli())
	lastMs := binary.BigEndian.Uint64(append([]byte{0, 0}, g.last[:6]...))
	if ms <= lastMs && !g.last.IsZero() {
		id = g.last
		for i := 15; i >= 6; i-- { // increment the 80-bit random part
			id[i]++
			if id[i] != 0 {
				break
			}
			if i == 6 {
				return ID{}, errors.New("session id space for this millisecond is exhausted")
			}
		}
	} else {
		var t [8]byte
		binary.BigEndian.PutUint64(t[:], ms)
		copy(id[:6], t[2:])
		if _, err := rand.Read(id[6:]); err != nil {
			return ID{}, err
		}
	}
	g.last = id
	return id, nil
}
