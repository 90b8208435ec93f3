//go:build gdcuda

package cuda

import (
	"errors"
	"os"
	"testing"
)

// execBackend returns the backend the executor tests run on: GPU 0, or a
// skip when there is none (a failure with GDATTN_REQUIRE_GPU set, as on the
// GPU machine, so that a device that cannot be opened is never mistaken for
// passing tests).
func execBackend(t testing.TB) (Backend, bool) {
	t.Helper()
	be, err := Open(0)
	if errors.Is(err, ErrNoDevice) && os.Getenv("GDATTN_REQUIRE_GPU") == "" {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { be.Close() })
	return be, true
}
