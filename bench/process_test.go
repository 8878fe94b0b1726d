package bench

import (
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// BenchmarkProcess times whole pal processes, start-up included, for the
// start-up targets (pal --version, one Sia-Philly trace under PAL with
// the artifact's settings), beside the floor a Go program that only
// prints a line costs on the same machine: most of a short run is fixed
// costs every Go binary pays, so a figure means little without it.
//
// ns/op is the wall time of one process as the benchmark starts and reaps
// it; cpu-ns/op is the child's CPU time (user and system) from the
// kernel's accounting, which on a shared machine is the steadier figure.
// pal is the binary named by PAL_BIN, so that two builds can be compared
// with benchstat:
//
//	CGO_ENABLED=0 go build -o /tmp/pal-new ./cmd/pal
//	PAL_BIN=/tmp/pal-new go test -run '^$' -bench Process -count 10 ./bench > new.txt
//	benchstat old.txt new.txt
//
// (Built with cgo, as go build does where a C compiler is, pal links the
// C library through the network package and starts about 3 ms later.)
//
// scripts/bench-scale.sh runs it for this checkout and, with BASE, for a
// git ref.
func BenchmarkProcess(b *testing.B) {
	bin := os.Getenv("PAL_BIN")
	if bin == "" {
		b.Skip("set PAL_BIN to a pal binary (go build -o /tmp/pal ./cmd/pal) to time whole processes")
	}
	floor := helloBinary(b)
	for _, c := range []struct {
		name string
		bin  string
		args []string
	}{
		{"floor", floor, nil},
		{"version", bin, []string{"--version"}},
		{"sia-philly-1-pal", bin, []string{"sim", "--trace", "sia-philly/1", "--placement", "pal"}},
	} {
		b.Run(c.name, func(b *testing.B) {
			var cpu time.Duration
			for b.Loop() {
				cmd := exec.Command(c.bin, c.args...)
				cmd.Stdout, cmd.Stderr = io.Discard, io.Discard
				if err := cmd.Run(); err != nil {
					b.Fatalf("%s %v: %v", c.bin, c.args, err)
				}
				cpu += cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
			}
			b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N), "cpu-ns/op")
		})
	}
}

var hello struct {
	once sync.Once
	path string
	err  error
}

// TestMain removes the floor program's directory: it is built once per
// test process and outlives any one benchmark (each run left one behind
// in the system's temporary directory).
func TestMain(m *testing.M) {
	code := m.Run()
	if hello.path != "" {
		os.RemoveAll(filepath.Dir(hello.path))
	}
	os.Exit(code)
}

// helloBinary builds, once per process, a Go program that prints one line
// and exits: the start-up floor on this machine and Go version.
func helloBinary(b *testing.B) string {
	hello.once.Do(func() {
		dir, err := os.MkdirTemp("", "pal-floor-")
		if err != nil {
			hello.err = err
			return
		}
		src := filepath.Join(dir, "main.go")
		prog := "package main\n\nimport \"fmt\"\n\nfunc main() { fmt.Println(\"floor\") }\n"
		if err := os.WriteFile(src, []byte(prog), 0o644); err != nil {
			hello.err = err
			return
		}
		hello.path = filepath.Join(dir, "floor")
		cmd := exec.Command("go", "build", "-o", hello.path, src)
		if out, err := cmd.CombinedOutput(); err != nil {
			hello.err = &buildError{err, string(out)}
		}
	})
	if hello.err != nil {
		b.Fatalf("building the start-up floor: %v", hello.err)
	}
	return hello.path
}

type buildError struct {
	err error
	out string
}

func (e *buildError) Error() string { return e.err.Error() + ": " + e.out }
