package agent

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"hash/maphash"
	"io"
	"math/bits"
	"slices"
	"sort"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/rookhq/rook/cas"
	"github.com/rookhq/rook/eventlog"
)

// Search bounds: one search reads at most this many body objects and this
// many bytes of them.
const (
	SearchMaxObjects  = 20000
	SearchMaxBytes    = 64 << 20
	SearchSnippetLen  = 160 // runes
	DefaultSearchHits = 40
	// SearchMaxTerms bounds the words of a query: each is looked for in
	// every body read (3,000 took 10 s on the 17 MB corpus).
	SearchMaxTerms = 32
)

// searchPage is how many event records a search reads at once.
const searchPage = 1024

// ErrNoSearchTerms: a query with nothing to search for once short words and
// stopwords are dropped.
var ErrNoSearchTerms = errors.New("the query has no words to search for (words of 2 or more letters, not stopwords, or a word with symbols such as c++)")

var searchStopwords = map[string]bool{
	"an": true, "and": true, "are": true, "as": true, "at": true, "be": true, "but": true, "by": true,
	"do": true, "for": true, "from": true, "has": true, "have": true, "if": true, "in": true, "is": true,
	"it": true, "its": true, "no": true, "not": true, "of": true, "on": true, "or": true, "so": true,
	"that": true, "the": true, "this": true, "to": true, "was": true, "were": true, "with": true,
}

// SearchTerms turns a query into its search terms: folded (foldRune, as
// find folds: κοσμος and ΚΟΣΜΟΣ are both κοσμοσ), split on
// anything but letters, digits and - _ . / (a version, a file name or a
// path is one term: "2.1.39", "store.go", "home/dev/rook"; so is "-v" or
// "__init__"), '.' and '/' trimmed from a word's ends (a sentence's full
// stop, a path's leading slash), without words of one character,
// stopwords and repeats. A word of the query (between spaces) whose only
// words are of one character but that has symbols too ("c++", "F#",
// "a+b") is one term, as written, less the quotes, brackets and
// punctuation around it: split, it was nothing, and `rook search c++`
// refused a query any user expects to work.
func SearchTerms(query string) []string {
	terms, _ := searchTermsOf(query)
	return terms
}

// searchTermsOf is SearchTerms of query, and what the query has between
// each two terms in a row (gaps[k], before terms[k]; none before the
// first), folded, a run of blanks written as one space: the words it
// dropped (of one letter, stopwords, the "t" of "can't") and the
// punctuation around them, which may stand between the terms where the
// query has them (termsTogether). gaps is nil when the query says a term
// twice: its terms are then not in the query's order.
func searchTermsOf(query string) (terms []string, gaps []string) {
	lower := foldString(query)
	seen := map[string]bool{}
	repeated := false
	end := -1 // where the last term ends in lower (the query folded)
	add := func(w string, at int) {
		if seen[w] {
			repeated = true
			return
		}
		seen[w] = true
		gap := ""
		if end >= 0 {
			gap = blanksAsOne(lower[end:at])
		}
		terms, gaps = append(terms, w), append(gaps, gap)
		end = at + len(w)
	}
	for _, field := range searchFields(lower) {
		short, long := false, false // words of one character, of more
		for _, w := range searchWords(field) {
			if n := charCount(w.text); n < 2 {
				short = short || n == 1
				continue
			}
			long = true
			if !searchStopwords[w.text] {
				add(w.text, w.at)
			}
		}
		const around = "\"'`()[]{}<>,;:!?./" // quotes, brackets, punctuation
		if w := strings.Trim(field.text, around); short && !long && charCount(w) >= 2 {
			add(w, field.at+len(field.text)-len(strings.TrimLeft(field.text, around)))
		}
	}
	if repeated {
		gaps = nil
	}
	return terms, gaps
}

// charCount is how many characters s has, a combining mark none of its
// own (it belongs to the one before it): é written e and U+0301 is of
// one letter, as é written as one character is.
func charCount(s string) int {
	n := 0
	for _, r := range s {
		if !unicode.IsMark(r) {
			n++
		}
	}
	return n
}

// searchWord is a piece of a query, at byte at of it.
type searchWord struct {
	text string
	at   int
}

// searchFields are the query's words between blanks (strings.Fields).
func searchFields(query string) []searchWord {
	var out []searchWord
	start := -1
	for i, r := range query {
		if unicode.IsSpace(r) {
			if start >= 0 {
				out = append(out, searchWord{query[start:i], start})
				start = -1
			}
		} else if start < 0 {
			start = i
		}
	}
	if start >= 0 {
		out = append(out, searchWord{query[start:], start})
	}
	return out
}

// searchWords splits a field of the query on anything but letters,
// digits and - _ . / (a version, a file name or a path is one word), and
// trims '.' and '/' from each word's ends (a sentence's full stop, a
// path's leading slash). A combining mark (Mn, Mc, Me) is part of the
// word it follows, as Unicode has it (UAX #29): split there, नमस्ते was
// the term "नमस" and found नमस्कार, and café written with U+0301 was
// "cafe" and found "cafeteria". A mark that follows no word is none.
func searchWords(field searchWord) []searchWord {
	var out []searchWord
	start := -1
	flush := func(i int) {
		if start < 0 {
			return
		}
		w := field.text[start:i]
		trimmed := strings.TrimLeft(w, "./")
		at := field.at + start + len(w) - len(trimmed)
		out = append(out, searchWord{strings.TrimRight(trimmed, "./"), at})
		start = -1
	}
	for i, r := range field.text {
		if unicode.IsLetter(r) || unicode.IsDigit(r) || strings.ContainsRune("-_./", r) {
			if start < 0 {
				start = i
			}
		} else if start >= 0 && unicode.IsMark(r) {
			continue
		} else {
			flush(i)
		}
	}
	flush(len(field.text))
	return out
}

// blanksAsOne is s with each run of blanks one space (a byte that is not
// UTF-8 kept as it is, as appendFold keeps it).
func blanksAsOne(s string) string {
	var b strings.Builder
	blank := false
	for i, r := range s {
		if unicode.IsSpace(r) {
			if !blank {
				b.WriteByte(' ')
			}
			blank = true
			continue
		}
		blank = false
		if r == utf8.RuneError && !strings.HasPrefix(s[i:], "\uFFFD") {
			b.WriteByte(s[i])
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

// termBytes is searchTermsOf's terms and gaps as the scorers take them:
// a gap of blanks only (or none) is nil, as the stopwords' rule has it
// already (termsTogether).
func termBytes(terms, gaps []string) (lowered, between [][]byte) {
	lowered = make([][]byte, len(terms))
	for i, t := range terms {
		lowered[i] = []byte(t)
	}
	if gaps == nil {
		return lowered, nil
	}
	between = make([][]byte, len(gaps))
	for i, g := range gaps {
		if strings.Trim(g, " ") != "" {
			between[i] = []byte(g)
		}
	}
	return lowered, between
}

// Searchable reports whether search reads bodies of this kind: every kind
// but checkpoints (file snapshots, not transcript).
func Searchable(k eventlog.Kind) bool { return k != eventlog.KindCheckpoint }

// SearchOptions narrow a search.
type SearchOptions struct {
	Session    *eventlog.ID // only this session; nil: every session
	Limit      int          // hits returned; 0: DefaultSearchHits
	MaxObjects int          // 0: SearchMaxObjects
	MaxBytes   int64        // 0: SearchMaxBytes
}

// SearchHit is a text that matched, shown as the newest event that has it.
// A fork or rewind shares its parent's events (a Codex fork copies its
// parent's lines), and an agent says the same thing more than once: each
// text is one hit, which counts the other events that have it instead of
// being repeated for each.
type SearchHit struct {
	Session eventlog.ID
	Title   string
	Seq     uint64
	Kind    eventlog.Kind
	Label   string
	Time    time.Time
	Snippet string
	Score   int
	Object  cas.Key
	// Binary: the body is binary (IsBinary), as show and history say it:
	// no snippet, its bytes are not text.
	Binary bool
	// Also: the other events with the same text; AlsoSessions: the
	// sessions they are in but this one.
	Also, AlsoSessions int
}

// SearchResult is a ranked page of hits.
type SearchResult struct {
	Terms          []string
	Hits           []SearchHit // best first, at most the limit
	TotalHits      int         // events that matched, before the limit (Hits groups them by body)
	ObjectsMatched int         // distinct bodies that matched
	Texts          int         // distinct texts that matched: the hits before the limit
	ObjectsScanned int         // distinct bodies read
	BytesScanned   int64
	// Truncated: the budget (objects or bytes) ended the scan before every
	// body was read; narrow with a session.
	Truncated bool
	// Unreadable counts bodies skipped because they are missing or corrupt.
	Unreadable int
	// TooLarge counts bodies skipped because each alone is larger than the
	// byte budget (a transcript's line with a file or an image in it).
	TooLarge int
	// SkippedSessions says which sessions could not be read (in full).
	SkippedSessions []string
}

// searchRef is one event naming a body.
type searchRef struct {
	seq   uint64
	kind  eventlog.Kind
	label string
	time  time.Time
}

// searchScore is what scanning one body found.
type searchScore struct {
	score   int
	snippet string
	binary  bool // of a body that is: no snippet
	bad     bool
	text    uint64 // a hash of the text scored: bodies of the same text are one hit
}

// Search ranks the events whose bodies match the query, across every
// session (newest first) or one. Each distinct body is read once however
// many events name it, and at most MaxObjects bodies and MaxBytes bytes
// are read in all: when that budget ends the scan, the result says so.
func (r *Rook) Search(query string, opts SearchOptions) (SearchResult, error) {
	terms, gaps := searchTermsOf(query)
	res := SearchResult{Terms: terms}
	if len(terms) == 0 {
		return res, ErrNoSearchTerms
	}
	if opts.Limit <= 0 {
		opts.Limit = DefaultSearchHits
	}
	if opts.MaxObjects <= 0 {
		opts.MaxObjects = SearchMaxObjects
	}
	if opts.MaxBytes <= 0 {
		opts.MaxBytes = SearchMaxBytes
	}
	var sessions []searchedSession
	if opts.Session != nil {
		m, err := r.Log.ReadMeta(*opts.Session)
		if err != nil {
			return res, err
		}
		sessions = []searchedSession{{id: *opts.Session, meta: m}}
	} else {
		all, err := r.Log.IDs()
		if err != nil {
			return res, err
		}
		sessions = byLastEvent(r.Log, all)
	}
	lowered, between := termBytes(terms, gaps)
	scanned := map[cas.Key]searchScore{}
	// A hit per matching text: a fork's copy of its parent's event names
	// the same body; a Codex fork's copy of its parent's lines, or a
	// line every turn repeats, is another body of the same text.
	hits := map[uint64]*searchGroup{}
	seed := maphash.MakeSeed()
	for _, ss := range sessions {
		if res.Truncated {
			break
		}
		id, meta := ss.id, ss.meta
		// Search reads no lock: a session listed, then removed by a
		// `session rm` in another rook before its metadata or log was
		// read, is simply not searched. Nothing is damaged, and calling
		// it so (a failed open, "searched what precedes the damage")
		// sent the user after a fault that is not there.
		if ss.metaErr != nil {
			if !r.Log.RemovedSince(id, ss.metaErr) {
				res.SkippedSessions = append(res.SkippedSessions, fmt.Sprintf("session %s skipped: %v", id, ss.metaErr))
			}
			continue
		}
		refs, order, err := r.searchRefs(meta)
		if err != nil && r.Log.RemovedSince(id, err) {
			continue
		}
		if err != nil {
			res.SkippedSessions = append(res.SkippedSessions, fmt.Sprintf("%v (searched what precedes the damage)", err))
		}
		for _, obj := range order {
			sc, ok := scanned[obj]
			if !ok {
				// The object budget counts the bodies read (or tried: an
				// unreadable one cost its read), not those passed over as
				// too large: one such took a slot, and the scan stopped a
				// body early, saying it had read one fewer than its budget.
				if len(scanned)-res.TooLarge >= opts.MaxObjects {
					res.Truncated = true
					break
				}
				// Stat first, so the byte budget is kept without reading
				// a body that would break it. A body larger than the
				// whole budget is skipped, counted: no budget left could
				// read it, and stopping at it would leave every older body
				// unsearched, each time.
				info, serr := r.Store.StatEntry(obj)
				if serr == nil && info.Size > opts.MaxBytes {
					res.TooLarge++
					scanned[obj] = sc
					continue
				}
				if serr == nil && res.BytesScanned+info.Size > opts.MaxBytes {
					res.Truncated = true
					break
				}
				// A big imported line is scored streamed (searchText), when
				// it can be exactly; else it is read whole.
				b, imported, streamed, err := r.readBodyOrStream(obj, opts.MaxBytes)
				var text func() uint64 // the hash of the text scored
				if streamed != nil {
					if streamed.total > opts.MaxBytes {
						res.TooLarge++ // as the whole path, without reading it whole
						scanned[obj] = sc
						continue
					}
					if res.BytesScanned+streamed.total > opts.MaxBytes {
						res.Truncated = true
						break
					}
					if score, snip, h, serr := r.searchText(streamed, lowered, between, seed); serr == nil {
						res.ObjectsScanned++
						res.BytesScanned += streamed.total
						sc.score, sc.snippet, text = score, snip, func() uint64 { return h }
					} else {
						b, imported, err = r.readBodyWithin(obj, opts.MaxBytes)
					}
				}
				if text == nil {
					if errors.Is(err, errBodyTooLarge) || err == nil && int64(len(b)) > opts.MaxBytes {
						// Stat did not know it: an imported line's object
						// leaves out the long strings cut from it (known
						// before they are read but for their escapes).
						res.TooLarge++
						scanned[obj] = sc
						continue
					}
					if err == nil && res.BytesScanned+int64(len(b)) > opts.MaxBytes {
						res.Truncated = true // Stat did not know it (a writer's unsynced body, an imported line)
						break
					}
					if err == nil {
						res.ObjectsScanned++
						res.BytesScanned += int64(len(b))
						if imported {
							b = textOfImported(b)
						}
						sc.score, sc.snippet = scoreHeldBody(b, lowered, between, !imported)
						if !imported && sc.score > 0 && IsBinary(b) {
							sc.snippet, sc.binary = "", true
						}
						text = func() uint64 { return maphash.Bytes(seed, b) }
					}
				}
				var nf *cas.NotFoundError
				var ce *cas.CorruptError
				switch {
				case err == nil:
					if sc.score > 0 {
						res.ObjectsMatched++
						sc.text = text()
					}
				case errors.As(err, &nf), errors.As(err, &ce):
					sc.bad = true
					res.Unreadable++
				default:
					return res, err
				}
				scanned[obj] = sc
			}
			if sc.score <= 0 {
				continue
			}
			g := hits[sc.text]
			if g == nil {
				g = &searchGroup{sessions: map[eventlog.ID]bool{}}
				hits[sc.text] = g
			}
			g.sessions[id] = true
			for _, ref := range refs[obj] {
				res.TotalHits++
				g.events++
				h := SearchHit{Session: id, Title: meta.Title, Seq: ref.seq, Kind: ref.kind, Label: ref.label,
					Time: ref.time, Snippet: sc.snippet, Score: sc.score, Object: obj, Binary: sc.binary}
				if g.events == 1 || newerHit(h, g.hit) {
					g.hit = h
				}
			}
		}
	}
	// One hit per body: memory is bounded by the bodies scanned, which the
	// budget bounds (unless lifted: rook search --all).
	for _, g := range hits {
		g.hit.Also, g.hit.AlsoSessions = g.events-1, len(g.sessions)-1
		res.Hits = append(res.Hits, g.hit)
	}
	res.Texts = len(res.Hits)
	sortHits(res.Hits)
	if len(res.Hits) > opts.Limit {
		res.Hits = res.Hits[:opts.Limit]
	}
	return res, nil
}

// searchedSession is a session Search goes through, with its metadata
// as read once for it (metaErr when it did not read: the session is
// skipped, saying why).
type searchedSession struct {
	id      eventlog.ID
	meta    eventlog.Meta
	metaErr error
}

// byLastEvent orders sessions by the time of their last event, newest
// first, so that a budget spends itself on recent conversation: an
// imported session's id says when it was imported, not when it was
// spoken, and a fork's copy of its parent's events is as old as they are
// (not SortByLastActive, which ranks a fork made now first). A session
// whose summary cannot be read goes last (its search says why). Each
// session's metadata is read here once, and kept for the search.
func byLastEvent(log *eventlog.Log, ids []eventlog.ID) []searchedSession {
	var ok []eventlog.Summary
	var bad []searchedSession
	for _, id := range ids {
		m, err := log.ReadMeta(id)
		if err != nil {
			bad = append(bad, searchedSession{id: id, metaErr: err})
			continue
		}
		if s, err := log.SummaryOf(m); err == nil {
			ok = append(ok, s)
		} else {
			bad = append(bad, searchedSession{id: id, meta: m})
		}
	}
	sort.SliceStable(ok, func(i, j int) bool {
		if a, b := ok[i].Updated, ok[j].Updated; !a.Equal(b) {
			return a.After(b)
		}
		return ok[i].ID.String() > ok[j].ID.String()
	})
	out := make([]searchedSession, 0, len(ids))
	for _, s := range ok {
		out = append(out, searchedSession{id: s.ID, meta: s.Meta})
	}
	sort.Slice(bad, func(i, j int) bool { return bad[i].id.String() > bad[j].id.String() })
	return append(out, bad...)
}

// searchGroup is the events naming one matching body.
type searchGroup struct {
	hit      SearchHit // the one shown
	events   int
	sessions map[eventlog.ID]bool
}

// newerHit says whether a is the event to show rather than b: the newer;
// of two at the same time (a fork's copy of its parent's event), the
// older session's, where it was said first; in a session, the later seq.
func newerHit(a, b SearchHit) bool {
	if !a.Time.Equal(b.Time) {
		return a.Time.After(b.Time)
	}
	if a.Session != b.Session {
		return a.Session.String() < b.Session.String()
	}
	return a.Seq > b.Seq
}

// searchRefs maps each searchable body of a session (its metadata read
// already) to the events that name it, and orders the bodies by their
// newest event, newest first (so a budget spends itself on recent
// conversation). On a damaged log it returns what it read before the
// damage with the error.
func (r *Rook) searchRefs(meta eventlog.Meta) (map[cas.Key][]searchRef, []cas.Key, error) {
	refs := map[cas.Key][]searchRef{}
	var order []cas.Key // by first sight; reversed below
	var rerr error
	from := uint64(0)
	for {
		evs, err := r.Log.ReadOf(meta, from, searchPage)
		if err != nil {
			rerr = err
		}
		for _, ev := range evs {
			if !Searchable(ev.Kind) {
				continue
			}
			if _, ok := refs[ev.Body]; !ok {
				order = append(order, ev.Body)
			}
			refs[ev.Body] = append(refs[ev.Body], searchRef{seq: ev.Seq, kind: ev.Kind, label: ev.Label, time: ev.Time})
		}
		if err != nil || len(evs) < searchPage {
			break
		}
		from = evs[len(evs)-1].Seq + 1
	}
	// Newest event first. Each body's newest seq is taken once: a sort
	// that looked it up in refs at each comparison spent a tenth of a
	// search over many imported sessions on those lookups. No two bodies
	// share a newest event, so the order is total.
	type bodyLast struct {
		body cas.Key
		last uint64
	}
	byLast := make([]bodyLast, len(order))
	for i, k := range order {
		rs := refs[k]
		byLast[i] = bodyLast{k, rs[len(rs)-1].seq}
	}
	slices.SortFunc(byLast, func(a, b bodyLast) int { return cmp.Compare(b.last, a.last) })
	for i, bl := range byLast {
		order[i] = bl.body
	}
	return refs, order, rerr
}

func sortHits(h []SearchHit) {
	sort.Slice(h, func(i, j int) bool {
		a, b := h[i], h[j]
		if a.Score != b.Score {
			return a.Score > b.Score
		}
		if !a.Time.Equal(b.Time) {
			return a.Time.After(b.Time)
		}
		if a.Session != b.Session {
			return a.Session.String() > b.Session.String()
		}
		return a.Seq > b.Seq
	})
}

// textOfImported is what search reads of an imported event's source
// lines: the string values of each line, decoded, one after another (a
// line that is not JSON as it is), but for those notText leaves out.
// The keys and the JSON around them are
// not text the user wrote or read (every line has "type" and "message"),
// and a string's escapes would hide its words ("\nfunc" is not "func")
// and make a whole transcript line one line to score and to show.
func textOfImported(body []byte) []byte {
	out := make([]byte, 0, len(body))
	for len(body) > 0 {
		var line []byte
		line, body, _ = bytes.Cut(body, []byte("\n"))
		var ok bool
		if out, ok = appendStringValues(out, entryBytes(line), false); !ok {
			out = append(append(out, line...), '\n')
		}
	}
	return out
}

// appendStringValues appends the text of a JSON line's string values, one
// a line; false when the line is not JSON. Codex writes a call's arguments
// and a tool's output with its metadata as JSON inside a string
// (payload.arguments, payload.output): those are read the same way, once,
// so search sees `rg -n login src/`, not
// {"command":["bash","-lc","rg -n login src/"]}. Any other string is text
// as it is, JSON or not (a settings file's content: its keys and numbers
// are words to find too).
func appendStringValues(out, line []byte, nested bool) ([]byte, bool) {
	strs, ok := stringValues(line, len(`"x"`))
	if !ok {
		return out, false
	}
	for i := range strs {
		out = appendStringValue(out, line, &strs[i], nested)
	}
	return out, true
}

// appendStringValue appends what appendStringValues reads of s, one string
// value of line: nothing when it is not text, else its text and a newline.
func appendStringValue(out, line []byte, s *jsonString, nested bool) []byte {
	if !nested && notText(s) || encodedValue(line, s) {
		return out
	}
	start := len(out)
	var ok bool
	if out, ok = appendDecodedString(out, line[s.Start+1:s.End-1]); !ok {
		return out
	}
	if text := out[start:]; !nested && codexJSONString(s) && len(text) <= maxCodexJSONString && len(text) > 1 && text[0] == '{' && json.Valid(text) {
		inner := bytes.Clone(text)
		if more, ok := appendStringValues(out[:start], inner, true); ok {
			return more
		}
		out = append(out[:start], inner...)
	} else if spans := appendNestedEncoded(nil, out[start:], plainQuote, start); len(spans) > 0 {
		// JSON in the text (a tool's output): its encoded values are
		// left out, as at the top level.
		out = cutSpans(out, spans)
	}
	return append(out, '\n')
}

// cutSpans cuts the spans, in order and at offsets of b, out of b.
func cutSpans(b []byte, spans []encodedSpan) []byte {
	w := spans[0].start
	for i, s := range spans {
		next := len(b)
		if i+1 < len(spans) {
			next = spans[i+1].start
		}
		w += copy(b[w:], b[s.end:next])
	}
	return b[:w]
}

// maxCodexJSONString bounds the JSON-in-a-string search reads as values:
// a larger one is searched as it is written.
const maxCodexJSONString = 1 << 20

// codexJSONString says whether s is one of the strings Codex writes JSON
// into: a function call's arguments, a tool's output.
func codexJSONString(s *jsonString) bool {
	return (s.Key == "arguments" || s.Key == "output") && len(s.Parents) == 2 && s.Parents[1] == "payload"
}

// notText says whether search leaves out a string value of an imported
// line (a line's own: JSON written inside a string, a Codex call's
// arguments or a tool's output, is all what the model or the tool wrote):
// the envelope every line repeats (ids, versions, the working directory,
// the model, settings, type and role tags; searching a project's name,
// "external" or "standard" would match every line), and signed state (a
// thinking block's signature, Codex's encrypted reasoning), which is never
// text a user wrote or read. The envelope is where the formats put it
// (inEnvelope): everywhere but inside what the model or a tool wrote, a
// tool's input or arguments, or a result's structured content, where a
// key of envelopeKeys is a word like any other (a tool's arguments named
// id, data or status are the model's words, shown by show and found by
// find). Inside a tool result (a tool_result's content blocks, Claude
// Code's toolUseResult, Codex's mcp_tool_call_end result) the tool's
// words are the blocks' text and the result's text-bearing fields
// (stdout, stderr, content, a file's content, originalFile, a patch's
// lines); the schema around them is envelope: the blocks' type tags, an
// image's source (its type, media_type, data; mimeType for MCP's),
// toolUseResult's type and status, and the token usage a result or
// message records (usage and every key in it). (Encoded state, an
// image's bytes under any key, encodedValue finds.)
func notText(s *jsonString) bool {
	if !inEnvelope(s.Parents) {
		return false
	}
	if envelopeKeys[s.Key] || slices.Contains(s.Parents, "usage") {
		return true
	}
	// Codex's turn_context names the summaries it wants ("auto"): a
	// setting, where a Claude Code summary line's summary is text.
	return s.Key == "summary" && len(s.Parents) == 2 && s.Parents[1] == "payload"
}

// inEnvelope says whether a string under these parents (jsonString.Parents:
// "" for the line itself and an array's elements) is in the envelope of a
// line: not inside what the model or a tool wrote with keys of its own
// choosing, which is a tool_use's input (Claude Code), a call's arguments
// (Codex's mcp_tool_call_end invocation; a function_call's are a JSON
// string) or a result's structuredContent. A tool result's content blocks
// and Claude Code's toolUseResult are in it: their keys are the format's
// (type, status, usage), their words are under other keys (notText).
func inEnvelope(parents []string) bool {
	for _, p := range parents {
		switch p {
		case "input", "arguments", "structuredContent":
			return false
		}
	}
	return true
}

// envelopeKeys are the keys of the envelope's fields (inEnvelope says
// where the envelope is).
var envelopeKeys = map[string]bool{
	// Claude Code
	"uuid": true, "parentUuid": true, "logicalParentUuid": true, "leafUuid": true, "sessionId": true,
	"userType": true, "version": true, "gitBranch": true, "slug": true, "cwd": true, "requestId": true,
	"messageId": true, "sourceToolAssistantUUID": true, "toolUseID": true, "parentToolUseID": true,
	"agentId": true, "tool_use_id": true, "stop_reason": true, "signature": true, "data": true,
	"media_type": true, "level": true, "service_tier": true, "inference_geo": true,
	"permissionMode": true, "entrypoint": true,
	// Codex
	"call_id": true, "turn_id": true, "encrypted_content": true, "originator": true, "cli_version": true,
	"model_provider": true, "image_url": true, "plan_type": true, "approval_policy": true,
	"effort": true, "mimeType": true,
	// both
	"type": true, "id": true, "timestamp": true, "role": true, "model": true, "status": true,
}

// searchRank is where a body ranks, best last, as README promises: a line
// with every term together, as the query gives them, first; then a line
// with every term; then every term, on lines of their own; then some of
// them. A line's is rankSome, rankEvery or rankTogether.
type searchRank int

const (
	rankSome     searchRank = iota // some of the terms
	rankApart                      // every term, on lines of their own
	rankEvery                      // a line with every term
	rankTogether                   // a line with every term, together as the query gives them
)

// wordStep is what each term found as a word of its own (bodyScore.words)
// adds to a body's score in its rank: more than any body scores in its
// rank and words (a line at most 20 a term: 10 of its own, 4 for every
// term on the line, 6 for together; a body half as much again, and 2 a
// term found: 32 a term), so that in a rank, a body with more of the
// terms as words of their own comes first ("test" in "mix test" over
// "attestation" on two lines, which a line's 3 for a word of its own did
// not outweigh). rankStep is what each rank adds: more than any body
// scores in the rank below, every term a word of its own.
func wordStep(terms int) int { return 32*terms + 1 }

func rankStep(terms int) int { return (terms + 1) * wordStep(terms) }

// everyTerm is found (bodyScore.found) with every one of n terms (the
// first 64).
func everyTerm(n int) uint64 {
	if n >= 64 {
		return ^uint64(0)
	}
	return 1<<n - 1
}

// scoreBody scores a body line by line against folded terms (gaps:
// what the query has between them, termBytes). Its rank (searchRank) comes
// first: a long output that names some of the terms on many lines never
// outranks a body with every term, however many lines it has ("ecto
// migration" on 40 lines of a log outranked, for "ecto migration
// timeout", a message with each of the three words on a line of its own).
// In its rank, a line scores, for each term found on it, 4 plus its count
// on the line up to 3 (3 more when it stands there as a whole word), and 4
// more for each term when the line has every term, 6 more again when it
// has them together, as the query gives them (termsTogether). The body's
// score is its best line's (of the best rank), plus what its other lines
// score up to half as much again, plus 2 for each term found anywhere in
// it. Between its rank and that score, each term found in the body as a
// word of its own counts (wordStep): in a rank, more terms found as words
// come first, however many lines have them inside other words. Its
// snippet is the best line.
func scoreBody(b []byte, terms, gaps [][]byte) (int, string) {
	s := bodyScore{terms: terms, gaps: gaps}
	for len(b) > 0 {
		var line []byte
		line, b, _ = bytes.Cut(b, []byte("\n"))
		s.line(line)
	}
	return s.result()
}

// scoreHeldBody is scoreBody of a body Search holds whole, but for a
// line of it longer than streamTextLine (a minified JSON, a log with no
// newline, appended with `session append`), which is scored as the
// streamed search scores one (longLine), piece by piece, and its snippet
// cut by snippetOfLine: scoreBody folded such a line whole into one
// growing buffer and made its snippet of all its runes, ten times the
// body (a 16 MiB line allocated 195 MiB, the same text in lines 17). What
// each gives is the same (a snippet longLine cannot cut exactly is cut of
// the line whole, as scoreBody cuts it), but for native: the body is
// rook's own (session append), not an imported line's text, and is
// binary when it is not UTF-8 (IsBinary), its snippet never shown; a
// snippet snippetOfLine cannot cut is of a line not UTF-8, and is not cut
// of the line folded whole for nothing.
func scoreHeldBody(b []byte, terms, gaps [][]byte, native bool) (int, string) {
	s := bodyScore{terms: terms, gaps: gaps}
	for off := 0; off < len(b); {
		line, _, _ := bytes.Cut(b[off:], []byte("\n"))
		if len(line) > streamTextLine {
			l := newLongLine(terms, gaps)
			l.write(line)
			if score, found, rank, at, ok := l.finish(); ok {
				s.longLine(score, found, l.words(), rank, longRef{start: int64(off), n: int64(len(line)), at: at})
				off += len(line) + 1
				continue
			}
		}
		s.line(line)
		off += len(line) + 1
	}
	score, snip := s.result()
	if ref := s.long; ref != nil && score > 0 {
		line := b[ref.start : ref.start+ref.n]
		var ok bool
		snip, ok = snippetOfLine(ref.at, func(w io.Writer) error {
			_, err := w.Write(line)
			return err
		})
		if !ok && native {
			snip = "" // binary: Search shows none
		} else if !ok {
			one := bodyScore{terms: terms, gaps: gaps}
			one.line(line)
			_, snip = one.result()
		}
	}
	return score, snip
}

// bodyScore is scoreBody fed a line at a time (the streamed search feeds it
// the lines of a text it never holds whole: keep, the best line is copied).
type bodyScore struct {
	terms       [][]byte
	gaps        [][]byte // termBytes: what the query has between the terms
	keep        bool
	total, best int
	bestRank    searchRank // the best line's
	bestLine    []byte
	bestAt      int
	low         []byte // the line folded, in one buffer for every line
	found       uint64 // the terms found in the body (the first 64)
	words       uint64 // of them, those found as a word of its own (wholeWord)
	// long: the best line is one scored streamed (longLine), not held:
	// where to read it again for its snippet.
	long *longRef
}

// longRef is where a line scored streamed is: bytes [start, start+n) of
// cut string cut's text (of the body itself, for a body held whole:
// scoreHeldBody), its first match at rune at.
type longRef struct {
	cut      int
	start, n int64
	at       int64
}

// longLine adds a line scored streamed (longLine.finish, longLine.words),
// at ref.
func (s *bodyScore) longLine(score int, found, words uint64, rank searchRank, ref longRef) {
	s.found |= found
	s.words |= words
	if score == 0 {
		return
	}
	s.total += score
	if s.better(score, rank) {
		s.best, s.bestRank, s.bestAt, s.bestLine = score, rank, 0, s.bestLine[:0]
		s.long = &ref
	}
}

// better says whether a line of this score and rank is the body's best
// rather than the best so far: the higher rank, then the higher score.
func (s *bodyScore) better(score int, rank searchRank) bool {
	return rank > s.bestRank || rank == s.bestRank && score > s.best
}

func (s *bodyScore) line(line []byte) {
	s.low = appendFold(s.low[:0], line)
	score, all, at := 0, true, -1
	for i, t := range s.terms {
		n := bytes.Count(s.low, t)
		if n == 0 {
			all = false
			continue
		}
		s.found |= 1 << (i % 64)
		score += 4 + min(n, 3)
		if wholeWord(s.low, t) {
			score += 3 // "mix test" over mix_audit and attestation
			s.words |= 1 << (i % 64)
		}
		if i := bytes.Index(s.low, t); at < 0 || i < at {
			at = i
		}
	}
	if score == 0 {
		return
	}
	rank := rankSome
	if all {
		score += 4 * len(s.terms)
		rank = rankEvery
		if len(s.terms) > 1 && termsTogether(s.low, s.terms, s.gaps) {
			score += 6 * len(s.terms) // "mix test" as written
			rank = rankTogether
		}
	}
	s.total += score
	if s.better(score, rank) {
		s.best, s.bestRank, s.bestAt = score, rank, at // in the folded line
		s.long = nil
		if s.keep {
			s.bestLine = append(s.bestLine[:0], line...)
		} else {
			s.bestLine = line
		}
	}
}

func (s *bodyScore) result() (int, string) {
	if s.total == 0 {
		return 0, ""
	}
	best, rank := s.best, s.bestRank
	if rank == rankSome && s.found == everyTerm(len(s.terms)) {
		rank = rankApart
	}
	score := best + min(s.total-best, best/2) + 2*bits.OnesCount64(s.found)
	score += bits.OnesCount64(s.words) * wordStep(len(s.terms))
	return int(rank)*rankStep(len(s.terms)) + score, searchSnippet(s.bestLine, lineOffset(s.bestLine, s.bestAt))
}

// termsTogether says whether line holds the terms one after another, in
// the query's order, each a word of its own, with only blanks between
// them, or the stopwords the terms leave out, or what the query itself
// has between them (gaps, termBytes: the words it dropped, with the
// punctuation around them): "mix test" in "run mix test --seed 0", not in
// "mix format, test" nor "remix testing"; "fix parser" in "fix the
// parser"; "can't connect" (the terms can, connect) in "can't connect";
// "create a branch" in "create a branch", not in "create it, a branch".
func termsTogether(line []byte, terms, gaps [][]byte) bool {
	for off := 0; off < len(line); {
		i := bytes.Index(line[off:], terms[0])
		if i < 0 {
			return false
		}
		i += off
		if termsTogetherAt(line, i, terms, gaps) {
			return true
		}
		off = i + 1
	}
	return false
}

// termsTogetherAt is termsTogether of the terms starting at line[i:]. Each
// term may start after the one before in two ways (past stopwords, past
// the query's gap), which may be at two places: both are followed, a set
// of places at most as large as the line (in practice one or two).
func termsTogetherAt(line []byte, i int, terms, gaps [][]byte) bool {
	if i > 0 && wordBefore(line[:i]) && wordAfter(terms[0]) {
		return false
	}
	var startsOn, endsOn [4]int       // (on the stack, as a line mostly needs)
	starts := append(startsOn[:0], i) // where terms[k] may start
	ends := endsOn[:0]                // where it ends
	for k, t := range terms {
		ends = ends[:0]
		for _, n := range starts {
			if !bytes.HasPrefix(line[n:], t) {
				continue
			}
			j := n + len(t)
			if j < len(line) && wordAfter(line[j:]) && wordBefore(t) {
				continue
			}
			ends = appendOnce(ends, j)
		}
		if len(ends) == 0 {
			return false
		}
		if k == len(terms)-1 {
			return true
		}
		next := terms[k+1]
		starts = starts[:0]
		for _, j := range ends {
			if n, ok := pastStopwords(line, j, next); ok {
				starts = appendOnce(starts, n)
			}
			if k+1 < len(gaps) && gaps[k+1] != nil {
				if n, ok := pastGap(line, j, gaps[k+1]); ok {
					starts = appendOnce(starts, n)
				}
			}
		}
	}
	return false
}

// appendOnce appends n to s unless s has it.
func appendOnce(s []int, n int) []int {
	if slices.Contains(s, n) {
		return s
	}
	return append(s, n)
}

// pastStopwords is where the term next may start after a term that ends
// at line[j]: past blanks (one at least) and the stopwords the terms
// leave out, each followed by blanks ("fix the parser" for the terms fix,
// parser); ok is false without a blank.
func pastStopwords(line []byte, j int, next []byte) (int, bool) {
	n := skipBlanks(line, j)
	if n == j {
		return 0, false
	}
	for {
		w := n
		for w < len(line) && line[w] >= 'a' && line[w] <= 'z' {
			w++
		}
		after := skipBlanks(line, w)
		if w == n || after == w || !searchStopwords[string(line[n:w])] || bytes.HasPrefix(line[n:], next) {
			return n, true
		}
		n = after
	}
}

// pastGap is where the next term may start after a term that ends at
// line[j] when the line has there what the query has between them (gap,
// termBytes): its bytes as they are, but a space, which is a run of
// blanks (one at least); ok is false when the line has something else.
func pastGap(line []byte, j int, gap []byte) (int, bool) {
	for _, c := range gap {
		if c != ' ' {
			if j >= len(line) || line[j] != c {
				return 0, false
			}
			j++
			continue
		}
		n := skipBlanks(line, j)
		if n == j {
			return 0, false
		}
		j = n
	}
	return j, true
}

// skipBlanks is the offset of the first byte at or after i in line that
// is not a space or a tab.
func skipBlanks(line []byte, i int) int {
	for i < len(line) && (line[i] == ' ' || line[i] == '\t') {
		i++
	}
	return i
}

// lineOffset maps an offset in appendFold(line) back to line. Folding
// changes some characters' lengths (İ, 2 bytes, is i; the Kelvin sign, 3,
// is k): a line of Turkish capitals before the match put the offset, as
// it was, a character too far back for each, and the snippet missed the
// match on a long line.
func lineOffset(line []byte, low int) int {
	n := 0 // bytes of the folded line so far
	for i := 0; i < len(line); {
		if n >= low {
			return i
		}
		f, w := foldedLen(line[i:])
		n, i = n+f, i+w
	}
	return len(line)
}

// wholeWord says whether t occurs in line as a word of its own: not inside
// a longer word (letters, digits, '_'), at the ends where t itself starts
// or ends with a word character ("-v" needs none on its left).
func wholeWord(line, t []byte) bool {
	for off := 0; off < len(line); {
		i := bytes.Index(line[off:], t)
		if i < 0 {
			return false
		}
		i += off
		j := i + len(t)
		left := i == 0 || !wordBefore(line[:i]) || !wordAfter(t)
		right := j == len(line) || !wordAfter(line[j:]) || !wordBefore(t)
		if left && right {
			return true
		}
		off = i + 1
	}
	return false
}

// wordBefore says whether b ends in a word character (isWordRune:
// "12→func": the arrow is not one, "日本test": 本 is).
func wordBefore(b []byte) bool {
	// A combining mark is part of the word it follows: what counts is the
	// character it is written on, and one written on nothing, or on a
	// blank or a sign, is none (searchWords splits a query so).
	for len(b) > 0 {
		r, n := utf8.DecodeLastRune(b)
		if !unicode.IsMark(r) {
			return isWordRune(r)
		}
		b = b[:len(b)-n]
	}
	return false
}

// wordAfter says whether b starts with a word character.
func wordAfter(b []byte) bool {
	r, _ := utf8.DecodeRune(b)
	return isWordRune(r)
}

// isWordRune says whether r is a word character: a letter, a digit, '_'
// or a combining mark, part of the word it follows (a term is not found
// as a word of its own in "café" written with U+0301, nor "नमस" in
// "नमस्ते").
func isWordRune(r rune) bool {
	return r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.IsMark(r)
}

// searchSnippet makes a line fit SearchSnippetLen runes, around the byte
// offset `at` of the first match, with control characters replaced and a
// '…' where it was clipped. The match's place and the cut are counted on
// the same runes, each byte that is not UTF-8 one U+FFFD (as show prints
// such a byte): strings.ToValidUTF8, which makes a run of them one, put
// the window a rune past the match for each byte of the run but one, and
// a snippet after 300 such bytes missed the match.
func searchSnippet(line []byte, at int) string {
	if bytes.Contains(line, []byte("\x1b[")) {
		line, at = stripSGRAt(line, at)
	}
	runes := []rune(string(line)) // each byte that is not UTF-8 a U+FFFD
	for i, r := range runes {
		// The line and paragraph separators break a line as a newline
		// does (cleanRune, terminalLine): a snippet is one line.
		if unicode.IsControl(r) || r == '\u2028' || r == '\u2029' {
			runes[i] = ' '
		}
	}
	// Trim, tracking where the match lands in runes.
	matchRune := utf8.RuneCount(line[:min(max(at, 0), len(line))])
	start, end := 0, len(runes)
	for start < end && unicode.IsSpace(runes[start]) {
		start++
	}
	for end > start && unicode.IsSpace(runes[end-1]) {
		end--
	}
	if end-start <= SearchSnippetLen {
		return string(runes[start:end])
	}
	// Clip: some context before the match, as much after it as fits.
	from := max(start, matchRune-SearchSnippetLen/4)
	if end-from <= SearchSnippetLen-1 {
		// The rest of the line fits after a leading '…'.
		return "…" + string(runes[end-(SearchSnippetLen-1):end])
	}
	room := SearchSnippetLen - 1 // the trailing '…'
	lead := ""
	if from > start {
		lead = "…"
		room--
	}
	return lead + string(runes[from:from+room]) + "…"
}
