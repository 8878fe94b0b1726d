package devcluster

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// A kwok that dies as it starts is started again: a stand-in that exits
// the first time (leaving a marker) and runs the second is kept, and the
// restart is written in its log; one that always exits is given up after
// three starts, with an error naming its log.
func TestStartKwokAgainAfterACrash(t *testing.T) {
	for _, c := range []struct {
		name, script, wantErr string
	}{
		{"dies once", "if [ ! -e \"$1\" ]; then touch \"$1\"; exit 2; fi\nexec sleep 30\n", ""},
		{"always dies", "exit 2\n", "kwok exited within 3s of starting, 3 times"},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.MkdirAll(filepath.Join(dir, "logs"), 0o755); err != nil {
				t.Fatal(err)
			}
			exe := filepath.Join(dir, "kwok")
			if err := os.WriteFile(exe, []byte("#!/bin/sh\n"+c.script), 0o755); err != nil {
				t.Fatal(err)
			}
			cl := &Cluster{Dir: dir}
			err := cl.startKwok(context.Background(), exe, filepath.Join(dir, "marker"))
			for _, p := range cl.procs {
				_ = syscall.Kill(-p.PID, syscall.SIGKILL)
			}
			if c.wantErr == "" {
				if err != nil {
					t.Fatalf("startKwok: %v", err)
				}
				log, _ := os.ReadFile(filepath.Join(dir, "logs", "kwok.log"))
				if !strings.Contains(string(log), "exited as it started; starting it again") {
					t.Errorf("the restart is not in kwok.log: %q", log)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), c.wantErr) {
				t.Fatalf("startKwok: %v, want %q", err, c.wantErr)
			}
		})
	}
}
