//go:build !gdcuda

package cuda

import "fmt"

// Open returns an error wrapping ErrNoDevice: the GPU backend is compiled
// only with -tags gdcuda (cgo, libdl; the CUDA libraries themselves are loaded
// at run time).
func Open(ordinal int) (Backend, error) {
	return nil, fmt.Errorf("%w: binary built without -tags gdcuda (device %d requested)", ErrNoDevice, ordinal)
}
