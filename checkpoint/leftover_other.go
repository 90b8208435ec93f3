//go:build !linux

package checkpoint

// processStart is unknown here.
func processStart(int) (string, bool) { return "", false }

// bootID is unknown here.
func bootID() string { return "" }
