//go:build !gdcuda

package cuda

import (
	"errors"
	"strings"
	"testing"
)

// TestOpenWithoutTag checks that Open explains the missing build tag.
func TestOpenWithoutTag(t *testing.T) {
	_, err := Open(0)
	if !errors.Is(err, ErrNoDevice) || !strings.Contains(err.Error(), "-tags gdcuda") {
		t.Fatalf("Open(0) = %v, want ErrNoDevice mentioning -tags gdcuda", err)
	}
}
