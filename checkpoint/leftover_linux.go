//go:build linux

package checkpoint

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"strconv"
	"strings"
)

// processStart returns the start time of process pid (field 22 of
// /proc/<pid>/stat, clock ticks since boot); known is true when /proc
// answered: start is then "" for no such process.
func processStart(pid int) (start string, known bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if errors.Is(err, fs.ErrNotExist) {
		return "", true
	}
	if err != nil {
		return "", false
	}
	// The command name (field 2) is in parentheses and may hold spaces.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return "", false
	}
	f := strings.Fields(string(b[i+1:])) // fields 3, 4, ...
	if len(f) < 20 {
		return "", false
	}
	return f[19], true
}

// bootID is the id of the running boot, "" if unknown.
func bootID() string {
	b, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// pidFree is not needed where start times are known.
func pidFree(int) bool { return false }
