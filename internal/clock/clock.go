// Package clock is rook's one clock. Code that needs the time takes a Clock so
// tests can fix it; nothing else in rook calls time.Now.
package clock

import (
	"sync"
	"time"
)

// Clock tells the time.
type Clock interface {
	Now() time.Time
}

// System is the real wall clock.
var System Clock = systemClock{}

type systemClock struct{}

func (systemClock) Now() time.Time { return time.Now() }

// Fixed is a clock for tests: it returns T until Advance moves it.
type Fixed struct {
	mu sync.Mutex
	T  time.Time
}

// Now returns the fixed time.
func (f *Fixed) Now() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.T
}

// Advance moves the clock forward by d.
func (f *Fixed) Advance(d time.Duration) {
	f.mu.Lock()
	f.T = f.T.Add(d)
	f.mu.Unlock()
}
