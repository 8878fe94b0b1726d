package tenant

import (
	"os"
	"testing"
)

// TestMain runs every test of the package with commit checking a
// decision's GPUs read by device number against the node-name lookup.
func TestMain(m *testing.M) {
	verifyDevices = true
	os.Exit(m.Run())
}
