//go:build unix

package agent

import (
	"regexp"
	"testing"

	"github.com/rookhq/rook/internal/asnobody"
)

// notRoot has the calling (top-level) test run as a user other than root:
// the permissions of the directories it checks do not bind root, so as
// root it would pass with or without what it tests. Not root, it returns
// true and the test goes on. As root, it runs this test binary again, the
// test alone, as the user nobody (asnobody.Run), and returns false: the
// caller returns.
func notRoot(t *testing.T) bool {
	t.Helper()
	return !asnobody.Run(t, "^"+regexp.QuoteMeta(t.Name())+"$", []string{t.Name()})
}
