package progress

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

func TestRunsLine(t *testing.T) {
	var b bytes.Buffer
	c := &clock{t: time.Unix(0, 0)}
	l := New(&b, "sweep", 0, c.now)
	c.t = c.t.Add(2 * time.Second)
	l.Runs(3, 10)
	if got := b.String(); !strings.Contains(got, "sweep: 3/10 runs, 2s elapsed, 1.5 runs/s") {
		t.Fatalf("line %q", got)
	}
	b.Reset()
	c.t = c.t.Add(50 * time.Millisecond) // too soon to redraw
	l.Runs(4, 10)
	if b.Len() != 0 {
		t.Fatalf("redrew after 50 ms: %q", b.String())
	}
	l.Runs(10, 10) // the last one always shows
	if !strings.Contains(b.String(), "10/10 runs") {
		t.Fatalf("final line %q", b.String())
	}
	b.Reset()
	l.Clear()
	if s := b.String(); strings.TrimSpace(strings.ReplaceAll(s, "\r", "")) != "" || !strings.HasPrefix(s, "\r") {
		t.Fatalf("clear wrote %q", s)
	}
}

// A simulation shows nothing before the delay, then the simulated time
// reached and jobs done.
func TestSimLineAfterDelay(t *testing.T) {
	var b bytes.Buffer
	c := &clock{t: time.Unix(0, 0)}
	hook := SimHook[status](New(&b, "simulating", 2*time.Second, c.now), "pal")
	c.t = c.t.Add(time.Second)
	hook(status{t: 3600, rounds: 10, done: 1, left: 2, tracked: 3})
	if b.Len() != 0 {
		t.Fatalf("drew before the delay: %q", b.String())
	}
	c.t = c.t.Add(1500 * time.Millisecond)
	hook(status{t: 90 * 86400, rounds: 21600, done: 40, left: 2, tracked: 3})
	if got := b.String(); !strings.Contains(got, "simulating pal: simulated 90.0 days (round 21600), 40 jobs done, 2 of 3 tracked left, 2.5s elapsed") {
		t.Fatalf("line %q", got)
	}
}

// Off a terminal there is no line, and a nil line is safe to use.
func TestNothingWhenPiped(t *testing.T) {
	var b bytes.Buffer
	l := ForTerminal(&b, "sweep", 0)
	if l != nil {
		t.Fatal("a buffer is not a terminal")
	}
	l.Runs(1, 2)
	l.Clear()
	if SimHook[status](l, "x") != nil || b.Len() != 0 {
		t.Fatal("nil line drew")
	}
}

// status is a simulator's progress as the line reads it.
type status struct {
	t                           float64
	rounds, done, left, tracked int
}

func (s status) Reached() (float64, int)   { return s.t, s.rounds }
func (s status) JobsDone() (int, int, int) { return s.done, s.left, s.tracked }
