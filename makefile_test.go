package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// `make demo DEMO_TRANSCRIPTS=~/.claude/projects` (README, "Set up on a
// fresh machine", and make demo's own hint when it finds none) imports
// the transcripts there. zsh (macOS's shell) and dash (Debian's sh) do
// not expand a ~ after the = of an argument: make got the literal
// `~/.claude/projects`, the demo tested [ -d "~/.claude/projects" ],
// said "(no transcripts at ~/.claude/projects ...)" and imported nothing.
// The Makefile now takes a leading ~ as the home directory, as rook takes
// it in --home.
//
// Here make gets the argument as zsh and dash pass it (no shell between),
// with HOME a temp directory holding one Claude Code transcript. rook is
// built into the test's temp directory (BIN, relative to the checkout, as
// the demo runs ./$(BIN)) and the demo's store is under TMPDIR, a temp
// directory too: nothing is left in the checkout or outside them.
func TestMakeDemoExpandsTildeInDemoTranscripts(t *testing.T) {
	if testing.Short() {
		t.Skip("runs make demo")
	}
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("no make")
	}
	home := t.TempDir()
	proj := filepath.Join(home, ".claude", "projects", "p")
	if err := os.MkdirAll(proj, 0o755); err != nil {
		t.Fatal(err)
	}
	line := `{"type":"user","sessionId":"s1","uuid":"u1","timestamp":"2026-01-01T00:00:00Z","cwd":"/w","message":{"role":"user","content":"hello there"}}` + "\n"
	if err := os.WriteFile(filepath.Join(proj, "s1.jsonl"), []byte(line), 0o644); err != nil {
		t.Fatal(err)
	}
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	bin, err := filepath.Rel(wd, filepath.Join(t.TempDir(), "rook"))
	if err != nil {
		t.Fatal(err)
	}
	env := []string{"HOME=" + home, "PATH=" + os.Getenv("PATH"), "TMPDIR=" + t.TempDir()}
	for _, k := range []string{"GOCACHE", "GOMODCACHE", "GOPATH", "GOFLAGS", "GOTOOLCHAIN"} {
		if v, err := exec.Command("go", "env", k).Output(); err == nil {
			env = append(env, k+"="+strings.TrimSpace(string(v)))
		}
	}
	cmd := exec.Command("make", "demo", "BIN="+bin, "DEMO_TRANSCRIPTS=~/.claude/projects")
	cmd.Env = env
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("make demo: %v\n%s", err, out)
	}
	if strings.Contains(string(out), "(no transcripts at ") {
		t.Errorf("make demo DEMO_TRANSCRIPTS=~/.claude/projects (the ~ as zsh and dash pass it) found no transcripts in %s/.claude/projects, which holds one:\n%s", home, out)
	}
	if !strings.Contains(string(out), "claude-code: 1 file(s)") {
		t.Errorf("make demo did not import the one transcript in ~/.claude/projects:\n%s", out)
	}
	if !strings.Contains(string(out), "# rook import claude-code "+home+"/.claude/projects") {
		t.Errorf("make demo does not name the directory it imports, ~ expanded:\n%s", out)
	}
}
