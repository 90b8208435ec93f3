package device

import (
	"strings"
	"testing"
)

// TestExecutor: "cpu" (and "") is the Go VM, a nil executor with a no-op
// release; an unknown name is refused naming -device.
func TestExecutor(t *testing.T) {
	for _, name := range []string{"", "cpu"} {
		ex, release, err := Executor(name, nil)
		if err != nil || ex != nil || release == nil {
			t.Fatalf("Executor(%q) = %v, %v, %v; want nil, a release, nil", name, ex, release != nil, err)
		}
		release()
	}
	if _, _, err := Executor("tpu", nil); err == nil || !strings.Contains(err.Error(), "-device") {
		t.Errorf("Executor(\"tpu\"): error %v, want one naming -device", err)
	}
}
