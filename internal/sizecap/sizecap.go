// Package sizecap reads whole input files with a size limit: a YAML or
// JSON document is parsed in memory, at several times its size, so a
// reader that takes a file whole must refuse one far larger than any real
// input before it reads it, with an error that names the file and the
// limit rather than running out of memory.
package sizecap

import (
	"fmt"
	"io"
	"os"
	"strconv"
)

// ReadFile reads path whole if it has at most limit bytes; what names the
// kind of file in the error ("a cells file").
func ReadFile(path string, limit int64, what string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return ReadAll(path, f, limit, what)
}

// ReadAll is ReadFile for an open reader; name is what errors call it.
// It reads at most limit+1 bytes.
func ReadAll(name string, r io.Reader, limit int64, what string) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(r, limit+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if int64(len(b)) > limit {
		return nil, &TooLarge{Name: name, Limit: limit, What: what}
	}
	return b, nil
}

// TooLarge is the refusal of a file over its limit.
type TooLarge struct {
	Name  string
	Limit int64
	What  string
}

func (e *TooLarge) Error() string {
	return fmt.Sprintf("%s: larger than %s, more than %s may have", e.Name, Bytes(e.Limit), e.What)
}

// Bytes writes a size the way limits are stated: whole MiB or KiB when
// it is one, else bytes.
func Bytes(n int64) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return strconv.FormatInt(n>>20, 10) + " MiB"
	case n >= 1<<10 && n%(1<<10) == 0:
		return strconv.FormatInt(n>>10, 10) + " KiB"
	}
	return strconv.FormatInt(n, 10) + " bytes"
}
