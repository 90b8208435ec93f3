package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
)

// The command's tests share one build of the binary.
var (
	buildOnce sync.Once
	binDir    string
	binPath   string
	buildErr  error
)

// fewshotBin builds the command once per test process and returns the
// binary's path.
func fewshotBin(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		if binDir, buildErr = os.MkdirTemp("", "fewshot-test-"); buildErr != nil {
			return
		}
		binPath = filepath.Join(binDir, "fewshot")
		if out, err := exec.Command("go", "build", "-o", binPath, ".").CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binPath
}

func TestMain(m *testing.M) {
	code := m.Run()
	if binDir != "" {
		os.RemoveAll(binDir)
	}
	os.Exit(code)
}
