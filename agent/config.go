package agent

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/BurntSushi/toml"

	"github.com/rookhq/rook/cas"
	"github.com/rookhq/rook/internal/vfs"
)

// ConfigFile is the store's settings file, in its home. It is optional:
// without it every setting has its default.
const ConfigFile = "config.toml"

// Defaults of the settings config.toml may change.
const (
	DefaultMaxSessionAgeDays = 180
	DefaultMaxSessions       = 2000
	DefaultMaxTotalBytes     = int64(4 << 30) // 4 GiB of stored (compressed) object bytes
)

// DefaultProtectTags are the tags that keep a session from retention.
var DefaultProtectTags = []string{"keep", "pinned"}

// Config is what $ROOK_HOME/config.toml sets:
//
//	[storage]
//	gc_grace = "10m"              # unreachable objects younger than this stay
//
//	[storage.retention]
//	max_session_age_days = 180    # 0: no age limit
//	max_sessions         = 2000   # 0: no count limit
//	max_total_bytes      = 4294967296  # stored object bytes; 0: no budget
//	protect_tags         = ["keep", "pinned"]
//
//	[mcp.discovery]               # bounds on reading an MCP server's tools
//	max_bytes       = 4194304     # response bytes in all
//	max_tools       = 512
//	max_pages       = 64
//	timeout         = "30s"       # the whole discovery (--timeout overrides)
//	connect_timeout = "10s"       # the connection and handshake
//
// Every key is optional: an absent key takes its default, and an explicit 0
// turns that limit off. An unknown key is an error, so a typo never silently
// falls back to a default.
//
// README.md's table of settings lists every key with its default; a test
// holds it to this struct.
type Config struct {
	Storage StorageConfig `toml:"storage" json:"storage"`
	MCP     MCPConfig     `toml:"mcp" json:"mcp"`
}

// MCPConfig is the [mcp] table.
type MCPConfig struct {
	Discovery MCPDiscovery `toml:"discovery" json:"discovery"`
}

// MCPDiscovery bounds reading an MCP server's tool list; zero values take
// the client's defaults.
type MCPDiscovery struct {
	MaxBytes       int64    `toml:"max_bytes" json:"max_bytes,omitempty"`
	MaxTools       int      `toml:"max_tools" json:"max_tools,omitempty"`
	MaxPages       int      `toml:"max_pages" json:"max_pages,omitempty"`
	Timeout        Duration `toml:"timeout" json:"timeout"`
	ConnectTimeout Duration `toml:"connect_timeout" json:"connect_timeout"`
}

// StorageConfig is the [storage] table.
type StorageConfig struct {
	GCGrace   Duration        `toml:"gc_grace" json:"gc_grace"`
	Retention RetentionPolicy `toml:"retention" json:"retention"`
}

// RetentionPolicy says which sessions `rook store prune` and `maintain`
// delete. A nil limit is no limit (LoadConfig fills every absent key with
// its default, so a loaded policy has none; a policy built by hand sets
// only the limits it wants), and so is an explicit 0.
type RetentionPolicy struct {
	// MaxSessionAgeDays deletes sessions rook has not written for this
	// many days: neither appended to nor created (an imported or forked
	// session counts from its import or fork, not from the times of the
	// events it brought).
	MaxSessionAgeDays *int `toml:"max_session_age_days" json:"max_session_age_days"`
	// MaxSessions keeps this many sessions, the most recently updated
	// (protected ones count toward it).
	MaxSessions *int `toml:"max_sessions" json:"max_sessions"`
	// MaxTotalBytes is the storage budget maintain holds the store to,
	// counted as the stored (compressed) bytes of its objects, what
	// `rook store stat` shows as "stored size": not the index, the event
	// logs or the dictionaries.
	MaxTotalBytes *int64 `toml:"max_total_bytes" json:"max_total_bytes"`
	// ProtectTags: a session with any of these tags is never deleted.
	ProtectTags []string `toml:"protect_tags" json:"protect_tags"`
}

// Duration is a time.Duration written as text ("10m", "1h30m").
type Duration struct{ time.Duration }

// durationShape is the text of a Go duration ("10m", "1h30m", "1.5h"),
// signed or not: one time.ParseDuration refuses though it has this
// shape is beyond what a duration holds.
var durationShape = regexp.MustCompile(`^[-+]?(?:(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:ns|us|µs|μs|ms|s|m|h))+$`)

// UnmarshalText reads a Go duration; it must not be negative, nor longer
// than a duration holds (about 292 years).
func (d *Duration) UnmarshalText(b []byte) error {
	v, err := time.ParseDuration(string(b))
	if err != nil && durationShape.Match(b) {
		if b[0] == '-' {
			return fmt.Errorf("duration %q is negative", b)
		}
		return fmt.Errorf("duration %q is too long: at most %v (about 292 years)", b, time.Duration(math.MaxInt64))
	}
	if err != nil {
		return fmt.Errorf("not a duration (%q): write it like \"10m\" or \"1h30m\"", b)
	}
	if v < 0 {
		return fmt.Errorf("duration %q is negative", b)
	}
	d.Duration = v
	return nil
}

// MarshalText writes the duration as Go prints it ("10m0s").
func (d Duration) MarshalText() ([]byte, error) { return []byte(d.Duration.String()), nil }

// DefaultConfig is the configuration without a config file.
func DefaultConfig() Config {
	var c Config
	c.fillDefaults(nil)
	return c
}

// Limit reads an optional limit: 0 when it is nil (no limit).
func Limit[T int | int64](p *T) T {
	if p == nil {
		return 0
	}
	return *p
}

func (c *Config) fillDefaults(md *toml.MetaData) {
	defined := func(key ...string) bool { return md != nil && md.IsDefined(key...) }
	if !defined("storage", "gc_grace") {
		c.Storage.GCGrace = Duration{DefaultGCGrace}
	}
	r := &c.Storage.Retention
	if r.MaxSessionAgeDays == nil {
		v := DefaultMaxSessionAgeDays
		r.MaxSessionAgeDays = &v
	}
	if r.MaxSessions == nil {
		v := DefaultMaxSessions
		r.MaxSessions = &v
	}
	if r.MaxTotalBytes == nil {
		v := DefaultMaxTotalBytes
		r.MaxTotalBytes = &v
	}
	if !defined("storage", "retention", "protect_tags") {
		r.ProtectTags = append([]string(nil), DefaultProtectTags...)
	} else if r.ProtectTags == nil {
		r.ProtectTags = []string{} // protect_tags = [] protects nothing
	}
}

// Config loads the store's config.toml (see LoadConfig).
func (r *Rook) Config() (Config, error) { return LoadConfig(r.fs, r.home) }

// LoadConfig reads home/config.toml through fsys. A missing file gives the
// defaults; a symbolic link to nothing in its place is an error, not a
// missing file (the settings it linked to would silently become the
// defaults). Nor is a file that is not a regular one (a named pipe, a
// device, a socket: readConfigFile), nor one past maxConfigBytes, read.
// Errors name the file, and the line when it is known: malformed
// TOML, a value of the wrong type, an unknown key (a typo must not silently
// become a default), a negative limit, a bad tag. A home that is no
// directory is the error every command gives for it (cas.ErrNoStore), not
// one about the config file.
func LoadConfig(fsys vfs.FS, home string) (Config, error) {
	if fsys == nil {
		fsys = vfs.OS
	}
	path := filepath.Join(home, ConfigFile)
	data, err := readConfigFile(fsys, path)
	if errors.Is(err, fs.ErrNotExist) {
		if err := danglingConfig(fsys, path); err != nil {
			return Config{}, err
		}
		return DefaultConfig(), nil
	}
	if err != nil {
		return Config{}, configReadError(fsys, home, path, err)
	}
	return ParseConfig(path, data)
}

// maxConfigBytes bounds what LoadConfig reads of config.toml: its
// settings take a few lines. One past it (a link to a log, a large file
// put there by mistake) is refused, not read whole into memory.
const maxConfigBytes = 1 << 20

// readConfigFile reads the config file at path, following a link to it
// (a dotfiles checkout's), as gitignore_read.go reads a .gitignore: opened
// without waiting, so a named pipe in its place (a secrets tool's, a
// stray mkfifo) is not waited on for a writer, forever, and refused with
// a device (a link to /dev/zero would be read without end) or a socket
// for not being a regular file; a regular file is read no further than
// maxConfigBytes.
func readConfigFile(fsys vfs.FS, path string) ([]byte, error) {
	return readNoWait(fsys, path, maxConfigBytes, func(fi fs.FileInfo) (bool, error) {
		switch {
		case fi.IsDir():
			return false, &fs.PathError{Op: "read", Path: path, Err: syscall.EISDIR}
		case NullDevice(fi):
			// A link to /dev/null, the usual "no settings here" (a dotfiles
			// checkout's, a CI job's): read as empty, the defaults, as
			// before config files were checked for being regular.
			return true, nil
		case !fi.Mode().IsRegular():
			return false, configNotRegular(path, fi.Mode())
		}
		return false, nil
	}, func() error { return configTooLarge(path) })
}

// NullDevice says whether fi is the null device (what a config.toml
// linked to /dev/null is): it reads as empty, and is no file of the store.
func NullDevice(fi fs.FileInfo) bool {
	if fi.Mode()&fs.ModeCharDevice == 0 {
		return false
	}
	null, err := os.Stat(os.DevNull)
	return err == nil && os.SameFile(fi, null)
}

// configNotRegular is the error of a config file that is a named pipe, a
// socket or a device (mode's type).
func configNotRegular(path string, mode fs.FileMode) error {
	return configRefused{fmt.Errorf("%s is %s, not a regular file: rook reads its settings only from a regular file (a named pipe would wait for a writer, a device never end); put the config file in its place (or a symbolic link to one), or remove it to use the defaults", path, fileKind(mode))}
}

// configTooLarge is the error of a config file past maxConfigBytes.
func configTooLarge(path string) error {
	return configRefused{fmt.Errorf("%s is larger than %d MiB, more than rook reads of a config file (its settings take a few lines): is it the right file? Make it smaller, or remove it to use the defaults", path, maxConfigBytes>>20)}
}

// configRefused is readConfigFile's error for a config file it does not
// read (not a regular file, too large): whole, naming the file and what
// to do.
type configRefused struct{ error }

func (e configRefused) Unwrap() error { return e.error }

// danglingConfig says, as an error, when the config file that does not
// read for not existing is there all the same: a symbolic link whose
// target is gone (a dotfiles checkout moved, say). Taken for no file, it
// would have prune and maintain run on the default limits the file had
// turned off. nil when no link is there.
func danglingConfig(fsys vfs.FS, path string) error {
	// Anything but a link found here was made since the read: when read,
	// there was no file, and the defaults were right.
	st, err := fsys.Lstat(path)
	if err != nil || st.Mode()&fs.ModeSymlink == 0 {
		return nil
	}
	// Only the OS file system has links (vfs.FS has no Readlink).
	target, err := os.Readlink(path)
	if err != nil {
		return fmt.Errorf("%s is a symbolic link to a file that does not exist (`ls -l %s` shows it): point it at the config file, or remove it to use the defaults", path, path)
	}
	return fmt.Errorf("%s is a symbolic link to %s, which does not exist: point it at the config file, or remove it to use the defaults", path, target)
}

// loopingConfig says, as an error, what a config file that did not open
// for too many levels of symbolic links (ELOOP) is: a link that leads back
// to itself, or to a link that does (`ln -s config.toml config.toml`), a
// link to no file as much as a dangling one; what to do is the same. nil
// when no link is there (the loop is in a directory above it: the error
// as it is names the path).
func loopingConfig(fsys vfs.FS, path string) error {
	st, err := fsys.Lstat(path)
	if err != nil || st.Mode()&fs.ModeSymlink == 0 {
		return nil
	}
	// Only the OS file system has links (vfs.FS has no Readlink).
	target, err := os.Readlink(path)
	if err != nil {
		return fmt.Errorf("%s is a symbolic link that leads to no file, through links that loop (`ls -l %s` shows where it points): point it at the config file, or remove it to use the defaults", path, path)
	}
	return fmt.Errorf("%s is a symbolic link to %s, and the links from there loop (too many levels of symbolic links), never reaching a file: point it at the config file, or remove it to use the defaults", path, target)
}

// configReadError names the config file that did not read once (an
// *fs.PathError names it already) and, for a directory in its place, the
// fix. A home that is a file, or under one, is no store: that is said as
// every command says it, not as a fault of config.toml.
func configReadError(fsys vfs.FS, home, path string, err error) error {
	if errors.As(err, new(configRefused)) {
		return err
	}
	if errors.Is(err, syscall.ENOTDIR) {
		if st, serr := fsys.Stat(home); errors.Is(serr, syscall.ENOTDIR) || (serr == nil && !st.IsDir()) {
			if merr := cas.MissingStore(fsys, home, err); merr != nil {
				return merr
			}
		} else if lerr := danglingConfig(fsys, path); lerr != nil {
			return lerr // a link whose target's path runs through a file
		}
	}
	if errors.Is(err, syscall.EISDIR) {
		return fmt.Errorf("%s is a directory, not a config file: remove it (rook then uses the defaults) or put the config file in its place", path)
	}
	if errors.Is(err, syscall.ELOOP) {
		if lerr := loopingConfig(fsys, path); lerr != nil {
			return lerr
		}
	}
	var pe *fs.PathError
	if errors.As(err, &pe) && pe.Path == path {
		return err
	}
	return fmt.Errorf("read %s: %w", path, err)
}

// ParseConfig parses a config file's bytes; path is only for errors.
func ParseConfig(path string, data []byte) (Config, error) {
	var c Config
	md, err := toml.NewDecoder(bytes.NewReader(data)).Decode(&c)
	if err != nil {
		var pe toml.ParseError
		// What to do is the same for both: the file is the user's to
		// fix, and without it rook runs on its defaults.
		const fix = ": fix the file (README.md, Settings, lists the keys), or remove it to use the defaults"
		if errors.As(err, &pe) {
			return Config{}, fmt.Errorf("%s: line %d: %s"+fix, path, pe.Position.Line, strings.TrimPrefix(pe.Message, "toml: "))
		}
		return Config{}, fmt.Errorf("%s: %s"+fix, path, strings.TrimPrefix(err.Error(), "toml: "))
	}
	at := func(key ...string) string {
		if n := keyLine(data, key); n > 0 {
			return fmt.Sprintf("%s: line %d", path, n)
		}
		return path
	}
	und := md.Undecoded()
	// The decoder matches a key to its field in any case ("GC_Grace"),
	// but TOML keys are case-sensitive and the defaults are filled by the
	// key as written: a key in another case would be taken for some
	// settings and silently replaced by its default for others. Every key
	// must be spelled as documented.
	for _, k := range md.Keys() {
		if known := knownKeys(k[:len(k)-1]); len(und) == 0 && known != nil && !slices.Contains(known, k[len(k)-1]) {
			und = []toml.Key{k}
		}
	}
	if len(und) > 0 {
		k := und[0]
		msg := fmt.Sprintf("%s: unknown key %q", at(k...), k.String())
		switch known := knownKeys(k[:len(k)-1]); {
		case len(known) > 0 && len(k) == 1:
			msg += fmt.Sprintf(" (the settings are under [%s])", strings.Join(known, ", "))
		case len(known) > 0:
			msg += fmt.Sprintf(" ([%s] takes %s)", toml.Key(k[:len(k)-1]).String(), strings.Join(known, ", "))
		}
		return Config{}, errors.New(msg)
	}
	r := &c.Storage.Retention
	if r.MaxSessionAgeDays != nil && *r.MaxSessionAgeDays < 0 {
		return Config{}, fmt.Errorf("%s: max_session_age_days is %d: use 0 for no age limit, or a number of days", at("storage", "retention", "max_session_age_days"), *r.MaxSessionAgeDays)
	}
	if r.MaxSessions != nil && *r.MaxSessions < 0 {
		return Config{}, fmt.Errorf("%s: max_sessions is %d: use 0 for no limit, or a number of sessions", at("storage", "retention", "max_sessions"), *r.MaxSessions)
	}
	if r.MaxTotalBytes != nil && *r.MaxTotalBytes < 0 {
		return Config{}, fmt.Errorf("%s: max_total_bytes is %d: use 0 for no budget, or a number of bytes", at("storage", "retention", "max_total_bytes"), *r.MaxTotalBytes)
	}
	d := c.MCP.Discovery
	for _, l := range []struct {
		key  string
		v    int64
		unit string
	}{{"max_bytes", d.MaxBytes, "bytes"}, {"max_tools", int64(d.MaxTools), "tools"}, {"max_pages", int64(d.MaxPages), "pages"}} {
		if l.v < 0 {
			return Config{}, fmt.Errorf("%s: %s is %d: use 0 for the default, or a number of %s", at("mcp", "discovery", l.key), l.key, l.v, l.unit)
		}
	}
	// A protect tag only matches tags: it is refused for what every rook
	// refused (tagShape), not for a character ValidTag keeps out of new
	// tags since, which a session tagged by an older rook may hold.
	for _, t := range r.ProtectTags {
		if err := tagShape(t); err != nil {
			return Config{}, fmt.Errorf("%s: protect_tags: %v", at("storage", "retention", "protect_tags"), err)
		}
	}
	c.fillDefaults(&md)
	return c, nil
}

// knownKeys lists the keys a table of Config accepts (for a typo's error).
func knownKeys(table []string) []string {
	var keys []string
	switch strings.Join(table, ".") {
	case "":
		keys = []string{"storage", "mcp"}
	case "mcp":
		keys = []string{"discovery"}
	case "mcp.discovery":
		keys = []string{"max_bytes", "max_tools", "max_pages", "timeout", "connect_timeout"}
	case "storage":
		keys = []string{"gc_grace", "retention"}
	case "storage.retention":
		keys = []string{"max_session_age_days", "max_sessions", "max_total_bytes", "protect_tags"}
	}
	sort.Strings(keys)
	return keys
}

// keyLine finds the line (from 1) that sets key: the decoder does not say
// where an unknown or out-of-range key is, so look for a line whose key,
// inside its table, is key, or for its table header. Keys are compared as
// parsed (tomlKeyPath), not as written: a quoted part ("retention"), white
// space around the dots, an escape (\u005f) are the same key. A key
// written in an inline table (retention = { max_sessions = -5 }) starts no
// line: then the line of the nearest enclosing key found (retention), or
// table header, stands for it. A line inside a multi-line string
// (between three quotes or three apostrophes) is the string's, neither a
// key nor a header, whatever it holds. 0: not found.
func keyLine(data []byte, key []string) int {
	if len(key) == 0 {
		return 0
	}
	var table []string
	// The line of the longest proper prefix of key seen, and its length.
	enclosing, enclosingLen := 0, 0
	encloses := func(full []string, line int) {
		if len(full) < len(key) && slices.Equal(full, key[:len(full)]) && len(full) > enclosingLen {
			enclosing, enclosingLen = line, len(full)
		}
	}
	open := "" // the delimiter of the multi-line string a line starts in
	for i, line := range strings.Split(string(data), "\n") {
		inString := open != ""
		open = multiLineOpen(line, open)
		if inString {
			continue
		}
		s := strings.TrimLeft(line, " \t\r\ufeff")
		if h, ok := strings.CutPrefix(s, "["); ok {
			h = strings.TrimPrefix(h, "[") // [[array of tables]]
			path, rest, ok := tomlKeyPath(h)
			if !ok || !strings.HasPrefix(rest, "]") {
				continue
			}
			table = path
			if slices.Equal(table, key) {
				return i + 1
			}
			encloses(table, i+1)
			continue
		}
		path, rest, ok := tomlKeyPath(s)
		if !ok || !strings.HasPrefix(rest, "=") {
			continue
		}
		full := append(slices.Clip(table), path...)
		if slices.Equal(full, key) {
			return i + 1
		}
		encloses(full, i+1)
	}
	return enclosing
}

// multiLineOpen reads a line of TOML that starts inside a multi-line
// string opened by open (three quotes or apostrophes; "": outside any)
// and returns the delimiter of the multi-line string the line ends
// inside, "" for none.
// Strings on one line are skipped, escapes and all, and so is a comment.
func multiLineOpen(line, open string) string {
	i := 0
	for {
		if open != "" {
			end := closeAt(line, i, open)
			if end < 0 {
				return open
			}
			i, open = end, ""
		}
		if i >= len(line) {
			return ""
		}
		switch c := line[i]; {
		case c == '#':
			return ""
		case strings.HasPrefix(line[i:], `"""`), strings.HasPrefix(line[i:], "'''"):
			open = line[i : i+3]
			i += 3
		case c == '"' || c == '\'':
			end := closeAt(line, i+1, string(c))
			if end < 0 {
				return "" // unclosed: a decoding error, not a string going on
			}
			i = end
		default:
			i++
		}
	}
}

// closeAt is where, in line from i, the string delimited by delim ends
// (just past its closing delimiter and, for a multi-line one, the up to
// two quotes more a string may end with); -1: not on this line. A basic
// string's backslash escapes the byte after it.
func closeAt(line string, i int, delim string) int {
	for i < len(line) {
		if delim[0] == '"' && line[i] == '\\' {
			i += 2
			continue
		}
		if strings.HasPrefix(line[i:], delim) {
			i += len(delim)
			for n := 0; len(delim) == 3 && n < 2 && i < len(line) && line[i] == delim[0]; n++ {
				i++
			}
			return i
		}
		i++
	}
	return -1
}

// tomlKeyPath reads a TOML key at the start of s (white space before it
// and around its dots is skipped): its parts as decoded (bare, "basic"
// with its escapes, 'literal'), and what follows it, white space trimmed.
// ok is false when s starts with no key.
func tomlKeyPath(s string) (path []string, rest string, ok bool) {
	for {
		s = strings.TrimLeft(s, " \t")
		var part string
		switch {
		case strings.HasPrefix(s, `"`):
			end := 1
			for end < len(s) && s[end] != '"' {
				if s[end] == '\\' {
					end++
				}
				end++
			}
			if end >= len(s) {
				return nil, "", false
			}
			raw := s[:end+1]
			if u, err := strconv.Unquote(raw); err == nil {
				part = u
			} else {
				part = raw[1 : len(raw)-1] // an escape Go does not read (TOML 1.1's \e): as written
			}
			s = s[end+1:]
		case strings.HasPrefix(s, "'"):
			end := strings.IndexByte(s[1:], '\'')
			if end < 0 {
				return nil, "", false
			}
			part, s = s[1:1+end], s[end+2:]
		default:
			n := strings.IndexFunc(s, func(r rune) bool {
				return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-')
			})
			if n < 0 {
				n = len(s)
			}
			if n == 0 {
				return nil, "", false
			}
			part, s = s[:n], s[n:]
		}
		path = append(path, part)
		s = strings.TrimLeft(s, " \t")
		if !strings.HasPrefix(s, ".") {
			return path, s, true
		}
		s = s[1:]
	}
}
