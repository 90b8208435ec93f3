//go:build cudaemu && !gdcuda

package cuda

import "testing"

// execBackend returns the backend the executor tests run on: the emulator
// (device kernels compiled with gcc, run serially).
func execBackend(t testing.TB) (Backend, bool) {
	t.Helper()
	be, err := OpenEmulator()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { be.Close() })
	return be, true
}
