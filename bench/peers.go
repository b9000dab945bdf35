package bench

// The peers: the same events stored the way other agents and the obvious
// alternatives store them, each measured as the bytes it leaves on disk.
// Every function takes a fresh, empty directory of its own.

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"unicode/utf8"

	"github.com/klauspost/compress/zstd"
	_ "modernc.org/sqlite" // pure Go: no cgo in the bench module

	"github.com/rookhq/rook/cas"
)

// PeerResult is what one peer costs for a fixture. Measured is false for
// figures that were not taken in this run (a missing tool, or published
// numbers); Bytes is then the published figure, or 0.
type PeerResult struct {
	Name     string
	Bytes    int64
	Note     string
	Measured bool
}

// peerSession is the session id the peers that keep one store it under.
const peerSession = "0195b2c4-7e3a-7c1d-9f00-000000000001"

// jsonlLine is one event as a transcript line, the shape of Claude Code's
// transcripts: one JSON object per line. A body that is JSON is embedded as
// JSON (as Claude Code embeds messages), text as a JSON string, anything
// else base64 in body_b64.
type jsonlLine struct {
	Seq       int             `json:"seq"`
	Kind      string          `json:"kind"`
	Label     string          `json:"label,omitempty"`
	Body      json.RawMessage `json:"body,omitempty"`
	BodyB64   []byte          `json:"body_b64,omitempty"`
	TokensIn  uint64          `json:"tokens_in"`
	TokensOut uint64          `json:"tokens_out"`
}

// peerJSONLBytes renders the events as a JSONL transcript.
func peerJSONLBytes(events []Event) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	for i, e := range events {
		l := jsonlLine{Seq: i + 1, Kind: e.Kind.String(), Label: e.Label, TokensIn: e.TokensIn, TokensOut: e.TokensOut}
		switch {
		case len(e.Body) == 0:
		case json.Valid(e.Body):
			var c bytes.Buffer
			if err := json.Compact(&c, e.Body); err != nil {
				return nil, err
			}
			l.Body = c.Bytes()
		case utf8.Valid(e.Body):
			s, err := json.Marshal(string(e.Body))
			if err != nil {
				return nil, err
			}
			l.Body = s
		default:
			l.BodyB64 = e.Body
		}
		if err := enc.Encode(&l); err != nil { // Encode ends the line
			return nil, fmt.Errorf("event %d: %w", i+1, err)
		}
	}
	return buf.Bytes(), nil
}

// PeerJSONL stores the events as one JSONL transcript file, the way Claude
// Code (and most agents) keep history. Bytes is the file's size.
func PeerJSONL(dir string, events []Event) (PeerResult, error) {
	res := PeerResult{Name: "JSONL transcript (Claude Code style)"}
	data, err := peerJSONLBytes(events)
	if err != nil {
		return res, err
	}
	res.Bytes, err = writeMeasured(filepath.Join(dir, "session.jsonl"), data)
	res.Measured = err == nil
	return res, err
}

// PeerJSONLZstd stores the same JSONL compressed whole with zstd at level
// (the zstd CLI's numbering, mapped by klauspost/compress): the best a
// transcript compressor can do, at the price of reading an event only by
// decompressing everything before it.
func PeerJSONLZstd(dir string, events []Event, level int) (PeerResult, error) {
	res := PeerResult{Name: fmt.Sprintf("JSONL + zstd -%d, whole file", level), Note: "no random access"}
	data, err := peerJSONLBytes(events)
	if err != nil {
		return res, err
	}
	z, err := peerZstd(data, level)
	if err != nil {
		return res, err
	}
	res.Bytes, err = writeMeasured(filepath.Join(dir, "session.jsonl.zst"), z)
	res.Measured = err == nil
	return res, err
}

// writeMeasured writes a peer's file and returns its size on disk.
func writeMeasured(path string, data []byte) (int64, error) {
	if err := os.WriteFile(path, data, 0o644); err != nil {
		return 0, err
	}
	st, err := os.Stat(path)
	if err != nil {
		return 0, err
	}
	return st.Size(), nil
}

// peerZstd compresses data as one zstd frame at the zstd CLI's level.
func peerZstd(data []byte, level int) ([]byte, error) {
	enc, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.EncoderLevelFromZstd(level)), zstd.WithEncoderConcurrency(1))
	if err != nil {
		return nil, err
	}
	defer enc.Close()
	return enc.EncodeAll(data, nil), nil
}

// peerXZ compresses data whole with the xz tool at its strongest preset
// (-9e, one thread): the best general-purpose compressor commonly at hand,
// measured on the same bytes in the same run. ok is false where xz is not
// installed.
func peerXZ(data []byte) (n int64, ok bool, err error) {
	path, err := exec.LookPath("xz")
	if err != nil {
		return 0, false, nil
	}
	cmd := exec.Command(path, "-9e", "-T1", "-c")
	cmd.Stdin = bytes.NewReader(data)
	var out bytes.Buffer
	cmd.Stdout = &out
	if err := cmd.Run(); err != nil {
		return 0, false, fmt.Errorf("xz: %w", err)
	}
	return int64(out.Len()), true, nil
}

// PeerSQLite stores the events as rows of one SQLite table, bodies inline
// as BLOBs, WAL mode, 256 rows a transaction, the way agents that keep a
// database do. Bytes is every file the database leaves in dir after a
// truncating checkpoint and close.
func PeerSQLite(dir string, events []Event) (PeerResult, error) {
	res := PeerResult{Name: "SQLite, one row per event (WAL)", Note: "no dedup, no compression"}
	path := filepath.Join(dir, "events.db")
	db, err := sql.Open("sqlite", path)
	if err != nil {
		return res, err
	}
	defer db.Close()
	db.SetMaxOpenConns(1) // one connection: PRAGMAs apply to the one writing
	ctx := context.Background()
	for _, q := range []string{
		"PRAGMA journal_mode=WAL",
		"PRAGMA synchronous=NORMAL",
		"CREATE TABLE events(session TEXT, seq INTEGER, kind TEXT, label TEXT, body BLOB, tokens_in INTEGER, tokens_out INTEGER, PRIMARY KEY(session, seq))",
	} {
		if _, err := db.ExecContext(ctx, q); err != nil {
			return res, fmt.Errorf("%s: %w", q, err)
		}
	}
	for start := 0; start < len(events); start += 256 {
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			return res, err
		}
		stmt, err := tx.PrepareContext(ctx, "INSERT INTO events(session, seq, kind, label, body, tokens_in, tokens_out) VALUES(?, ?, ?, ?, ?, ?, ?)")
		if err != nil {
			tx.Rollback()
			return res, err
		}
		for i := start; i < min(start+256, len(events)); i++ {
			e := events[i]
			body := e.Body
			if body == nil {
				body = []byte{}
			}
			if _, err := stmt.ExecContext(ctx, peerSession, i+1, e.Kind.String(), e.Label, body, int64(e.TokensIn), int64(e.TokensOut)); err != nil {
				stmt.Close()
				tx.Rollback()
				return res, fmt.Errorf("insert event %d: %w", i+1, err)
			}
		}
		stmt.Close()
		if err := tx.Commit(); err != nil {
			return res, err
		}
	}
	if _, err := db.ExecContext(ctx, "PRAGMA wal_checkpoint(TRUNCATE)"); err != nil {
		return res, err
	}
	if err := db.Close(); err != nil {
		return res, err
	}
	res.Bytes, res.Measured = peerDirBytes(dir), true
	return res, nil
}

// PeerGit stores each distinct body as a blob in a git repository (the way
// agents that checkpoint through git keep content): it returns the
// repository's size with loose objects, and after `git gc` has packed them
// (deltas and zlib). Bodies only: git keeps no event metadata here. The
// repository is made with an empty template (no sample hooks), so .git
// holds what git itself writes.
func PeerGit(dir string, events []Event) ([]PeerResult, error) {
	loose := PeerResult{Name: "git, loose objects (distinct bodies)", Note: "bodies only, zlib per object"}
	packed := PeerResult{Name: "git after gc (packed, deltas)", Note: "bodies only"}
	gitBin, err := exec.LookPath("git")
	if err != nil {
		loose.Note, packed.Note = "git not on PATH", "git not on PATH"
		return []PeerResult{loose, packed}, nil
	}
	work := filepath.Join(dir, "repo")
	if err := os.MkdirAll(filepath.Join(work, "bodies"), 0o755); err != nil {
		return nil, err
	}
	git := func(args ...string) error {
		cmd := exec.Command(gitBin, append([]string{
			"-c", "user.name=bench", "-c", "user.email=bench@localhost",
			"-c", "commit.gpgSign=false", "-c", "gc.auto=0", "-c", "core.autocrlf=false",
		}, args...)...)
		cmd.Dir = work
		cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL="+os.DevNull, "GIT_CONFIG_NOSYSTEM=1")
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("git %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(out.String()))
		}
		return nil
	}
	if err := git("init", "-q", "--template=", "."); err != nil {
		return nil, err
	}
	seen := map[cas.Key]bool{}
	n := 0
	for _, e := range events {
		id := cas.ID(e.Body)
		if seen[id] {
			continue
		}
		seen[id] = true
		if err := os.WriteFile(filepath.Join(work, "bodies", fmt.Sprintf("%06d", n)), e.Body, 0o644); err != nil {
			return nil, err
		}
		n++
	}
	if err := git("add", "-A", "bodies"); err != nil {
		return nil, err
	}
	if err := git("commit", "-q", "--no-verify", "-m", "bodies"); err != nil {
		return nil, err
	}
	gitDir := filepath.Join(work, ".git")
	loose.Bytes, loose.Measured = peerDirBytes(gitDir), true
	if err := git("gc", "-q"); err != nil {
		return []PeerResult{loose, packed}, err
	}
	packed.Bytes, packed.Measured = peerDirBytes(gitDir), true
	return []PeerResult{loose, packed}, nil
}

// fromMiB turns a published MiB figure into bytes.
func fromMiB(m float64) int64 { return int64(math.Round(m * (1 << 20))) }

// PublishedOriginal is the Rust original's published result for its
// compaction fixture (3000 turns, 64 files read 5 times each), as it gave
// them: not measured here, and not comparable on another fixture.
func PublishedOriginal() []PeerResult {
	const note = "published, not measured"
	return []PeerResult{
		{Name: "original: logical bytes", Bytes: fromMiB(23.31), Note: note},
		{Name: "original: after dedup", Bytes: fromMiB(5.29), Note: note},
		{Name: "original: standalone zstd (8.4x)", Bytes: fromMiB(0.63), Note: note},
		{Name: "original: trained dictionaries (37.1x)", Bytes: fromMiB(0.14), Note: note},
		{Name: "original: on disk (5.8x end to end)", Bytes: fromMiB(4.02), Note: note},
	}
}

// AllPeers runs every peer on the events, each in its own subdirectory of
// dir, in table order: JSONL, JSONL + zstd -3 and -19, SQLite, git.
func AllPeers(dir string, events []Event) ([]PeerResult, error) {
	var out []PeerResult
	sub := func(name string) (string, error) {
		p := filepath.Join(dir, name)
		return p, os.MkdirAll(p, 0o755)
	}
	var errs []error
	run := func(name string, f func(string) ([]PeerResult, error)) {
		d, err := sub(name)
		if err == nil {
			var rs []PeerResult
			rs, err = f(d)
			out = append(out, rs...)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", name, err))
		}
	}
	one := func(f func(string) (PeerResult, error)) func(string) ([]PeerResult, error) {
		return func(d string) ([]PeerResult, error) {
			r, err := f(d)
			if err != nil {
				return nil, err
			}
			return []PeerResult{r}, nil
		}
	}
	run("jsonl", one(func(d string) (PeerResult, error) { return PeerJSONL(d, events) }))
	run("zstd3", one(func(d string) (PeerResult, error) { return PeerJSONLZstd(d, events, 3) }))
	run("zstd19", one(func(d string) (PeerResult, error) { return PeerJSONLZstd(d, events, 19) }))
	run("sqlite", one(func(d string) (PeerResult, error) { return PeerSQLite(d, events) }))
	run("git", func(d string) ([]PeerResult, error) { return PeerGit(d, events) })
	return out, errors.Join(errs...)
}

// peerDirBytes sums the sizes of every file under dir.
func peerDirBytes(dir string) int64 {
	var n int64
	filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if fi, err := d.Info(); err == nil {
				n += fi.Size()
			}
		}
		return nil
	})
	return n
}
