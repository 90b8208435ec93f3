//go:build gdcuda

package cuda

import (
	"errors"
	"testing"
)

// execBackend returns the backend the executor tests run on: GPU 0, or a
// skip when there is none.
func execBackend(t testing.TB) (Backend, bool) {
	t.Helper()
	be, err := Open(0)
	if errors.Is(err, ErrNoDevice) {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { be.Close() })
	return be, true
}
