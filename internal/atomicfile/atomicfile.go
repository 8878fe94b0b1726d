// Package atomicfile writes a file whole or not at all, so that a run
// that fails half-way never leaves half an output behind for a later
// step to read as if it were complete.
package atomicfile

import (
	"fmt"
	"io"
	"os"
)

// Write writes what write writes to path.tmp and renames that to path
// once all of it is written. On an error the temporary file is removed
// and path is left as it was. Nothing is held in memory on the way, so
// the output may be larger than memory.
func Write(path string, write func(io.Writer) error) error {
	tmp := path + ".tmp"
	f, err := os.Create(tmp)
	if err != nil {
		return err
	}
	if err := write(f); err != nil {
		f.Close()
		os.Remove(tmp)
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		os.Remove(tmp)
		return err
	}
	return os.Rename(tmp, path)
}
