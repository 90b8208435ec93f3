//go:build !cudaemu

package cuda

import "fmt"

// OpenEmulator returns an error wrapping ErrNoDevice: the CPU emulator is
// compiled only with -tags cudaemu (it needs cgo and a C compiler).
func OpenEmulator() (Backend, error) {
	return nil, fmt.Errorf("%w: the emulator is built only with -tags cudaemu", ErrNoDevice)
}
