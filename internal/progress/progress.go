// Package progress draws one status line for long work on a terminal:
// runs done of a total (sweep, reproduce) or how far a simulation has got
// (pal sim). The line is rewritten in place, at most a few times a
// second, and only once the work has taken longer than a delay; on a pipe
// or under CI nothing is drawn at all, so logs and captured output stay
// clean. A nil *Line is valid and draws nothing.
package progress

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"golang.org/x/term"
)

// Line is one status line.
type Line struct {
	w     io.Writer
	what  string
	delay time.Duration
	now   func() time.Time
	start time.Time
	mu    sync.Mutex
	last  time.Time
	width int // characters drawn, to wipe
}

// Every is the least time between two redraws.
const Every = 200 * time.Millisecond

// ForTerminal returns a Line on w when w is an interactive terminal and
// CI is not set, and nil (draw nothing) otherwise. Nothing shows before
// delay has passed.
func ForTerminal(w io.Writer, what string, delay time.Duration) *Line {
	f, ok := w.(*os.File)
	if !ok || !term.IsTerminal(int(f.Fd())) || os.Getenv("CI") != "" {
		return nil
	}
	return New(w, what, delay, time.Now)
}

// New returns a Line that always draws on w, reading the clock from now
// (tests pass a fake clock).
func New(w io.Writer, what string, delay time.Duration, now func() time.Time) *Line {
	return &Line{w: w, what: what, delay: delay, now: now, start: now()}
}

// Runs reports done of total runs: count, elapsed time and rate.
func (l *Line) Runs(done, total int) {
	if l == nil {
		return
	}
	l.draw(done == total, func(el time.Duration) string {
		rate := float64(done) / el.Seconds()
		return fmt.Sprintf("%s: %d/%d runs, %s elapsed, %.1f runs/s", l.what, done, total, round(el), rate)
	})
}

// Simulated is how far a simulation has got, as its driver reports it
// after every round (the simulator's sim.Status has these methods). The
// line reads this interface rather than the simulator's type, so the
// package stays below the drivers it reports on.
type Simulated interface {
	// Reached is the simulated time in seconds and the rounds simulated.
	Reached() (t float64, rounds int)
	// JobsDone is the jobs finished, the tracked jobs not yet finished,
	// and the tracked jobs in all.
	JobsDone() (done, trackedLeft, tracked int)
}

// SimHook returns a hook for a simulator's progress (sim.Config.Progress)
// that reports on l the simulated time reached and the jobs done; nil
// when l is nil.
func SimHook[S Simulated](l *Line, label string) func(S) {
	if l == nil {
		return nil
	}
	return func(st S) {
		t, rounds := st.Reached()
		done, left, tracked := st.JobsDone()
		l.draw(false, func(el time.Duration) string {
			return fmt.Sprintf("%s %s: simulated %s (round %d), %d jobs done, %d of %d tracked left, %s elapsed",
				l.what, label, simTime(t), rounds, done, left, tracked, round(el))
		})
	}
}

// Clear wipes the line (before other output is printed, say).
func (l *Line) Clear() {
	if l == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.wipe()
}

func (l *Line) wipe() {
	if l.width > 0 {
		fmt.Fprintf(l.w, "\r%s\r", strings.Repeat(" ", l.width))
		l.width = 0
	}
}

func (l *Line) draw(force bool, text func(elapsed time.Duration) string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	t := l.now()
	el := t.Sub(l.start)
	if el < l.delay || (!force && t.Sub(l.last) < Every) {
		return
	}
	l.last = t
	s := text(el)
	l.wipe()
	fmt.Fprint(l.w, "\r"+s)
	l.width = len(s)
}

func round(d time.Duration) time.Duration { return d.Round(100 * time.Millisecond) }

// simTime writes simulated seconds with a unit a reader can picture.
func simTime(s float64) string {
	switch {
	case s < 2*3600:
		return fmt.Sprintf("%.0f s", s)
	case s < 3*86400:
		return fmt.Sprintf("%.1f h", s/3600)
	case s < 2*365*86400:
		return fmt.Sprintf("%.1f days", s/86400)
	}
	return fmt.Sprintf("%.1f years", s/(365*86400))
}
