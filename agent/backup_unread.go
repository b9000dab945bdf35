package agent

import (
	"errors"
	"fmt"
	"strings"

	"github.com/rookhq/rook/cas"
	"github.com/rookhq/rook/eventlog"
)

// A Claude Code file backup an import stored (a capture of the backups
// the session's lines named, captureBackupsLabel) whose object does not
// read: damaged (cas.CorruptError), or gone from the store
// (cas.NotFoundError). It failed the whole diff ("b.txt: its captured
// copy is unreadable"), and a rewind that needed it refused saying only
// that, naming no event and nothing of what to do.
//
// Only a file's first state is read (the diff's before the session, the
// rewind's at the point): a later backup of it that does not read is
// not needed, and changes nothing. Nor is another state of the file ever
// taken in its place: the state is that backup's, and it is not known.
// So the diff leaves that file out (Uncompared) and says, in a note, the
// event, why and what to do, the rest compared; a rewind refuses before
// it writes anything or makes a fork (planRestore reads every copy it
// will write first), naming the file, the event, why and what to do, or
// --keep-files; one whose file already holds the backup's bytes writes
// nothing there, so needs no copy (holdsState), and goes. A capture a session made itself (`rook session capture`,
// a checkpoint) is not one: its copy that does not read still fails the
// diff, as it did.

// eventAt is an event of a session: the one whose capture holds a state
// (Change.capture).
type eventAt struct {
	session eventlog.ID
	seq     uint64
}

// unreadCopyError is a restore's refusal of change c, whose copy does not
// read (err): its words are a checkpoint restore's; a rewind of a Claude
// Code file backup says more (unreadBackupRefusal).
type unreadCopyError struct {
	c   Change
	err error
}

func (e *unreadCopyError) Error() string {
	return fmt.Sprintf("cannot restore %s: its captured copy is unreadable: %v", e.c.Path, e.err)
}

func (e *unreadCopyError) Unwrap() error { return e.err }

// unreadBackup is a file's first state, a Claude Code file backup, whose
// object does not read (err).
type unreadBackup struct {
	c   Change
	err error
}

// unreadBackupOf says whether err, of reading c's copy, is one of a
// Claude Code file backup whose object does not read (damaged, or gone
// from the store); an error of another kind (the store itself failing)
// still fails what read it.
func unreadBackupOf(c Change, err error) (unreadBackup, bool) {
	var ce *cas.CorruptError
	var nf *cas.NotFoundError
	if !c.backup || c.transcript || c.capture.session.IsZero() || !(errors.As(err, &ce) || errors.As(err, &nf)) {
		return unreadBackup{}, false
	}
	return unreadBackup{c: c, err: err}, true
}

// in says where u's backup is, for session id's diff or rewind: "event
// #8 of this session", or of the session it is in (a fork's ancestor's
// late capture; a subagent's).
func (u unreadBackup) in(id eventlog.ID, this string) string {
	if u.c.capture.session == id {
		return fmt.Sprintf("event #%d of %s", u.c.capture.seq, this)
	}
	return fmt.Sprintf("event #%d of session %s", u.c.capture.seq, u.c.capture.session)
}

// why is why u's file is not compared (Uncompared).
func (u unreadBackup) why(id eventlog.ID) string {
	return fmt.Sprintf("its state before is not known: its Claude Code file backup, in %s (a capture of Claude Code's file backups), cannot be read (%v)", u.in(id, "the session"), u.err)
}

// backupHow says what to do: as of the session's other objects that do
// not read (unreadHowOf); where that is to read its transcript again,
// that only does while Claude Code's file-history directory holds the
// backup (an import reads it there: Reread puts back what its scratch
// import stores).
func (r *Rook) backupHow(u unreadBackup) string {
	how := r.unreadHowOf(u.c.capture.session, u.err)
	if strings.Contains(how, " --reread ") {
		how = "while Claude Code's file-history directory still holds the backup, " + how
	}
	return how
}

// unreadBackupNotes are the notes of session id's diff for its files
// whose first state is a backup that does not read (unread): each names
// the backup, its event, why, and what to do; the first
// maxNotKnownNamed, then how many more. seqs are those of the session's
// own events among them.
func (r *Rook) unreadBackupNotes(id eventlog.ID, unread []unreadBackup) (notes []string, seqs []uint64) {
	for _, u := range unread {
		if u.c.capture.session == id {
			seqs = append(seqs, u.c.capture.seq)
		}
		if len(notes) < maxNotKnownNamed {
			notes = append(notes, fmt.Sprintf("the file backup of %s in %s (a capture of Claude Code's file backups) cannot be read (%v): %s is not compared (uncompared): what it held before the session is not known; %s",
				u.c.Path, u.in(id, "this session"), u.err, u.c.Path, r.backupHow(u)))
		}
	}
	if more := len(unread) - maxNotKnownNamed; more > 0 {
		notes = append(notes, fmt.Sprintf("%d more file backups of this session cannot be read, as those above: their files are not compared (uncompared)", more))
	}
	return notes, seqs
}

// unreadBackupRefusal is the refusal of a rewind of session id whose
// plan could not read a file's copy (uc), when that is a Claude Code
// file backup whose object does not read: the file's state at the point
// is not known. Nil for another.
func (r *Rook) unreadBackupRefusal(id eventlog.ID, uc *unreadCopyError) error {
	u, ok := unreadBackupOf(uc.c, uc.err)
	if !ok {
		return nil
	}
	return fmt.Errorf("cannot rewind the files: the file backup of %s in %s (a capture of Claude Code's file backups) cannot be read (%v): what %s held at the point is not known; %s; then run this again, or put the files back yourself and rewind with --keep-files, which rewinds the conversation only: nothing changed",
		u.c.Path, u.in(id, "session "+id.String()), u.err, u.c.Path, r.backupHow(u))
}
