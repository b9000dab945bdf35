package mcpclient

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"strings"
	"syscall"
	"unicode"
	"unicode/utf8"
)

// FailureKind says what a failure needs from the user.
type FailureKind int

const (
	// NeedsCredential: the server rejected the credential (HTTP 401 or
	// 403), or the one named is not set. Only the user can fix it: edit the
	// server.
	NeedsCredential FailureKind = iota + 1
	// NeedsOAuth: the server wants an OAuth sign-in, which rook does not do.
	NeedsOAuth
	// Unreachable: no answer (refused, name not found, timed out, the
	// program could not start or exited). Often nothing to do.
	Unreachable
	// ProtocolError: the server answered, but with an error or with
	// something that is not MCP.
	ProtocolError
	// DiscoveryError: the tool list could not be read whole and within
	// bounds (cycle, duplicate, malformed page, too many or too large, too
	// slow).
	DiscoveryError
)

func (k FailureKind) String() string {
	switch k {
	case NeedsCredential:
		return "needs credential"
	case NeedsOAuth:
		return "needs OAuth"
	case Unreachable:
		return "unreachable"
	case ProtocolError:
		return "protocol error"
	case DiscoveryError:
		return "discovery error"
	}
	return fmt.Sprintf("FailureKind(%d)", int(k))
}

// OAuthMessage is the Msg of every NeedsOAuth failure.
const OAuthMessage = "this server requires OAuth sign-in, which rook does not do yet"

// Failure is an error from talking to a server, classified.
type Failure struct {
	Kind   FailureKind
	Status int    // the HTTP status, when there was one
	Msg    string // complete and plain; server-written parts are cleaned of control characters
	Err    error  // the cause (*RPCError for a server's JSON-RPC error), may be nil
	// answerLost: the request reached the server (or was written to the
	// program), and the connection went away before its answer came.
	answerLost bool
	// accepted: the server took the request and gave no answer rook can
	// read (HTTP 202 or 204; a 200 whose body does not carry the
	// response; a response of the request's id that does not decode): it
	// may act on it, or have.
	accepted bool
	// ended: the request's event stream ended without its answer (no
	// read failed): it may be resumed.
	ended bool
}

// lostAnswer marks an Unreachable failure that came after the request
// was sent: the server may have acted on it. Other errors stay as they
// are.
func lostAnswer(err error) error {
	var f *Failure
	if !errors.As(err, &f) || f.Kind != Unreachable || f == errClosed {
		return err
	}
	c := *f
	c.answerLost = true
	return &c
}

// errNotSent: the request's time ran out before it was written whole (the
// program did not read its stdin, the connection was not made or did not
// take the body): the server never had it. It is a deadline all the same.
var errNotSent error = notSentError{}

// errPartlySent is errNotSent for a request of which only a part was
// written to a program, which was then ended (errPartWritten).
var errPartlySent error = notSentError{partly: true}

// errNotSentCancelled and errPartlySentCancelled are errNotSent and
// errPartlySent for a request the caller gave up on (its context
// cancelled: an interrupt) while it was being written: a cancellation,
// not a deadline.
var (
	errNotSentCancelled    error = notSentError{cancelled: true}
	errPartlySentCancelled error = notSentError{partly: true, cancelled: true}
)

// NotSent says whether err, a failure of Call, is one of a call that was
// never written whole (its time ran out, or it was given up, first): the
// server did not have it, and the tool did not run.
func NotSent(err error) bool {
	var ns notSentError
	return errors.As(err, &ns)
}

// errAllButNewline: a request's time ran out with all of it written to a
// program but its final newline, and rook ended the program (as after
// any partial write, errPartWritten). A program that reads JSON values,
// not lines, may have had it whole: the request may have been acted on.
// The program was reached; its time ran out: a deadline, not a server
// that went away.
var errAllButNewline error = allButNewlineError{}

type allButNewlineError struct{}

func (allButNewlineError) Error() string {
	return "the request's time ran out with all of it written but its final newline, and rook ended the program"
}
func (allButNewlineError) Unwrap() error { return context.DeadlineExceeded }

type notSentError struct{ partly, cancelled bool }

func (e notSentError) Error() string {
	msg := "the request was not sent in time"
	if e.cancelled {
		msg = "the request was given up before it was sent"
	}
	if e.partly {
		msg += ": only part of it was written, and the program was ended"
	}
	return msg
}

func (e notSentError) Unwrap() error {
	if e.cancelled {
		return context.Canceled
	}
	return context.DeadlineExceeded
}

func (f *Failure) Error() string {
	if f.Msg != "" {
		return f.Msg
	}
	if f.Err != nil {
		return f.Kind.String() + ": " + f.Err.Error()
	}
	return f.Kind.String()
}

func (f *Failure) Unwrap() error { return f.Err }

// KindOf is the kind of the Failure in err's chain, or 0.
func KindOf(err error) FailureKind {
	var f *Failure
	if errors.As(err, &f) {
		return f.Kind
	}
	return 0
}

var errClosed = &Failure{Kind: Unreachable, Msg: "the connection to the server is closed"}

// errSessionExpired is an HTTP 404 for a request that carried a session id:
// the server forgot the session, and the client initializes again (once).
var errSessionExpired = &Failure{Kind: ProtocolError, Status: 404, Msg: "the server no longer knows the session (HTTP 404)"}

// tooLargeError is a response larger than the bytes it was allowed.
type tooLargeError struct{ limit int64 }

func (e *tooLargeError) Error() string {
	return fmt.Sprintf("the server's answer is larger than %d bytes", e.limit)
}

func protocolf(err error, format string, args ...any) *Failure {
	return &Failure{Kind: ProtocolError, Msg: fmt.Sprintf(format, args...), Err: err}
}

func discoveryf(err error, format string, args ...any) *Failure {
	return &Failure{Kind: DiscoveryError, Msg: fmt.Sprintf(format, args...), Err: err}
}

func unreachable(err error, format string, args ...any) *Failure {
	return &Failure{Kind: Unreachable, Msg: "the server could not be reached: " + fmt.Sprintf(format, args...), Err: err}
}

// netFailure classifies an error from dialing or reading a connection. A
// done ctx wins: the caller decides what its deadline means.
func netFailure(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		return err
	}
	var dnsErr *net.DNSError
	var opErr *net.OpError
	if msg := certificateRefused(err); msg != "" {
		// The server answered: the TLS handshake was made and its
		// certificate refused here. Not a blip that passes (Unreachable):
		// it fails the same until the certificate or this machine's
		// trust changes.
		return protocolf(err, "%s", msg)
	}
	switch {
	case strings.Contains(err.Error(), "proxyconnect"):
		return unreachable(err, "the proxy could not be reached (%v)", err)
	case errors.As(err, &dnsErr):
		if dnsErr.IsNotFound {
			return unreachable(err, "the name %s was not found", dnsErr.Name)
		}
		return unreachable(err, "the name %s could not be looked up (%v)", dnsErr.Name, dnsErr.Err)
	case errors.Is(err, syscall.ECONNREFUSED):
		where := ""
		if errors.As(err, &opErr) && opErr.Addr != nil {
			where = " at " + opErr.Addr.String()
		}
		return unreachable(err, "connection refused%s", where)
	case isTimeout(err):
		return unreachable(err, "it did not answer in time")
	}
	return unreachable(err, "%v", err)
}

// certificateRefused says why the server's TLS certificate was refused,
// when that is what err is; else "".
func certificateRefused(err error) string {
	var (
		verify    *tls.CertificateVerificationError
		authority x509.UnknownAuthorityError
		invalid   x509.CertificateInvalidError
		host      x509.HostnameError
		roots     x509.SystemRootsError
	)
	why := ""
	switch {
	case errors.As(err, &authority):
		why = "it is signed by an authority this machine does not trust (self-signed, or a private CA)"
	case errors.As(err, &host):
		why = "it is not for this host (" + clean(host.Error(), 200) + ")"
	case errors.As(err, &invalid):
		why = clean(invalid.Error(), 200)
	case errors.As(err, &roots):
		why = "this machine's trusted certificates could not be read"
	case errors.As(err, &verify):
		why = clean(verify.Err.Error(), 200)
	default:
		return ""
	}
	return "the server's TLS certificate was refused: " + why + "; fix the server's certificate, or have this machine trust its CA (the system's certificates, or SSL_CERT_FILE / SSL_CERT_DIR)"
}

func isTimeout(err error) bool {
	var t interface{ Timeout() bool }
	return errors.As(err, &t) && t.Timeout()
}

// clean makes server-written text safe to show on a terminal: control
// characters become spaces, invalid UTF-8 becomes U+FFFD, and it is cut to
// max runes.
func clean(s string, max int) string {
	var b strings.Builder
	n := 0
	for len(s) > 0 {
		r, size := utf8.DecodeRuneInString(s)
		s = s[size:]
		if n == max {
			b.WriteString("…")
			break
		}
		if unicode.IsControl(r) || r == '\u2028' || r == '\u2029' || (r >= 0x202a && r <= 0x202e) || (r >= 0x2066 && r <= 0x2069) {
			r = ' '
		}
		b.WriteRune(r)
		n++
	}
	return strings.TrimSpace(b.String())
}
