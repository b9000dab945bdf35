package cli

import (
	"bytes"
	"reflect"
	"strings"
	"testing"

	"github.com/alecthomas/kong"
)

// stringFlags calls f with every command's words (rook store ls: store,
// ls) and each flag it takes whose value is a string, a []string or a
// *string: the flags rawString decodes.
func stringFlags(t *testing.T, f func(words []string, flag *kong.Flag)) {
	t.Helper()
	parser, err := kong.New(&CLI{})
	if err != nil {
		t.Fatal(err)
	}
	for _, leaf := range parser.Model.Leaves(false) {
		var words []string
		for n := leaf; n != nil && n.Type != kong.ApplicationNode; n = n.Parent {
			words = append([]string{n.Name}, words...)
		}
		for _, group := range leaf.AllFlags(false) {
			for _, flag := range group {
				typ := flag.Target.Type()
				if typ.Kind() == reflect.Slice || typ.Kind() == reflect.Ptr {
					typ = typ.Elem()
				}
				if typ == reflect.TypeFor[string]() {
					f(words, flag)
				}
			}
		}
	}
}

// Every string flag given an empty value is a usage error naming it
// (README: "it never falls back to the default"), unless its tag says
// the empty value is a value, or that its command refuses it in words of
// its own (the scripts show those).
func TestEmptyFlagValueRefused(t *testing.T) {
	t.Setenv("ROOK_HOME", t.TempDir()) // nothing parsed may reach a store
	tested := 0
	stringFlags(t, func(words []string, flag *kong.Flag) {
		switch tag := flag.Tag.Get("empty"); tag {
		case "value", "own":
			return
		case "":
		default:
			t.Errorf("rook %s --%s: tag empty:%q: give empty:\"value\" or empty:\"own\"", strings.Join(words, " "), flag.Name, tag)
			return
		}
		args := append(append([]string(nil), words...), "--"+flag.Name+"=")
		var stdout, stderr bytes.Buffer
		code := Main(args, strings.NewReader(""), &stdout, &stderr)
		want := "rook: --" + flag.Name + ": empty value: give one, or leave the flag out for its default\n"
		if code != ExitUsage || !strings.HasPrefix(stderr.String(), want) || stdout.Len() != 0 {
			t.Errorf("rook %s: exit %d, stdout %q, stderr %q; want exit 2 and %q", strings.Join(args, " "), code, stdout.String(), stderr.String(), want)
		}
		tested++
	})
	if tested < 10 {
		t.Fatalf("only %d string flags found: the walk of the commands is broken", tested)
	}
}

// A repeatable flag takes each value whole: kong's default cut at commas
// made `mcp add --arg /src,/docs` two arguments, `session new --tag a,b`
// two tags where `session tag ID a,b` adds one.
func TestRepeatableFlagNotSplit(t *testing.T) {
	stringFlags(t, func(words []string, flag *kong.Flag) {
		if flag.Target.Kind() == reflect.Slice && flag.Tag.Sep != -1 {
			t.Errorf("rook %s --%s: cut at %q: tag it sep:\"none\"", strings.Join(words, " "), flag.Name, flag.Tag.Sep)
		}
	})
}
