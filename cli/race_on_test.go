//go:build race

package cli

// raceDetector: this test binary runs under -race (make test's unit
// target runs cli so), whose instrumentation allocates beside the code's
// own: a test bounding what a command allocates allows for it.
const raceDetector = true
