//go:build unix

package scripts

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/rookhq/rook/internal/asnobody"
)

// notRootScripts check what rook does where permissions say no: as root,
// which reads and writes anything, TestScripts skips them, so CI (root)
// never ran them. TestScriptsAsNobody runs them as the user nobody.
var notRootScripts = []string{
	"checkpoint_gitignore_above_unreadable", // a .gitignore above the workspace the user may not read
	"export_output_refused",                 // an --output in a directory the user may not write
	"import_unreadable",                     // files, directories and links rook may not read
	"checkpoint_unsearchable_dir",           // a workspace directory that may be read, not searched
	"checkpoint_gitignore_unreadable_deep",  // a .gitignore in a workspace directory the user may not read
}

func TestScriptsAsNobody(t *testing.T) {
	var names, files []string
	for _, s := range notRootScripts {
		names = append(names, "TestScripts/"+s)
		files = append(files, filepath.Join("testdata", s+".txtar"))
	}
	if !asnobody.Run(t, "^TestScripts$/^("+strings.Join(notRootScripts, "|")+")$", names, files...) {
		t.Skip("not root: TestScripts ran these scripts as this user")
	}
}
