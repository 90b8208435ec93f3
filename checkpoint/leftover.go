package checkpoint

import (
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// saveMarker is the file a save keeps in its temporary directory while it
// writes there (and in the replaced checkpoint while it deletes it): the
// writer's process id, start time and boot, so that a later save can prove
// that a leftover directory is a gdattn save's and that its writer is
// dead. It never stays in a saved checkpoint.
const saveMarker = ".gdattn-save"

// markerFormat identifies a save marker.
const markerFormat = "gdattn-save"

// markerJSON is the content of a save marker.
type markerJSON struct {
	Format string `json:"format"` // markerFormat
	PID    int    `json:"pid"`
	// Start is the process's start time as the system records it (on
	// Linux field 22 of /proc/<pid>/stat, clock ticks since boot), ""
	// where unknown; Boot the boot's id (/proc/sys/kernel/random/boot_id).
	Start string `json:"start"`
	Boot  string `json:"boot"`
}

// writeSaveMarker writes the marker of this process into dir.
func writeSaveMarker(dir string) error {
	pid := os.Getpid()
	start, _ := processStart(pid)
	b, err := json.Marshal(markerJSON{Format: markerFormat, PID: pid, Start: start, Boot: bootID()})
	if err != nil {
		return err
	}
	f, err := os.OpenFile(filepath.Join(dir, saveMarker), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	_, err = f.Write(b)
	return errors.Join(err, f.Close())
}

// writerDead reports whether the process that wrote m is provably gone: it
// ran in an earlier boot, or no process has its id, or the process that has
// it started at another time (the id was reused). Where start times are
// unknown, only a free process id proves it.
func writerDead(m markerJSON) bool {
	if m.PID <= 0 {
		return false
	}
	if b := bootID(); b != "" && m.Boot != "" && b != m.Boot {
		return true
	}
	if m.PID == os.Getpid() {
		return false
	}
	start, known := processStart(m.PID)
	if known {
		return start == "" || (m.Start != "" && start != m.Start)
	}
	return pidFree(m.PID)
}

// removeLeftovers removes the temporary directories dir+".tmp-*" that
// earlier saves left when their process died (kill -9, a crash): only a
// directory holding a valid save marker whose writer is provably dead, and
// in it only what Save writes (config.json, the .npy files of the
// checkpoint layout, its folders, the marker). Anything else, and the
// directories holding it, stays; so does everything else beside dir.
// Errors are ignored: a leftover that cannot be removed harms nothing.
func removeLeftovers(dir string) {
	parent, base := filepath.Split(dir)
	if parent == "" {
		parent = "."
	}
	entries, err := os.ReadDir(parent)
	if err != nil {
		return
	}
	for _, e := range entries {
		if !e.IsDir() || !strings.HasPrefix(e.Name(), base+".tmp-") {
			continue // IsDir is false for a symbolic link
		}
		removeLeftover(filepath.Join(parent, e.Name()))
	}
}

// removeLeftover removes the leftover save directory tmp if its marker
// proves its writer dead; see removeLeftovers.
func removeLeftover(tmp string) {
	root, err := os.OpenRoot(tmp)
	if err != nil {
		return
	}
	defer root.Close()
	raw, err := readRegular(root, saveMarker, 4096, "a save marker's size")
	if err != nil {
		return
	}
	var m markerJSON
	if decodeStrict(raw, &m) != nil || m.Format != markerFormat || !writerDead(m) {
		return
	}
	layout := map[string]bool{".": true, "optim/m": true, "optim/v": true, extraDir: true}
	var files []string
	fs.WalkDir(root.FS(), ".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !d.Type().IsRegular() {
			return nil
		}
		dir := filepath.ToSlash(filepath.Dir(path))
		if (path == configFile || strings.HasSuffix(path, ".npy")) && layout[dir] {
			files = append(files, path)
		}
		return nil
	})
	for _, f := range files {
		root.Remove(f)
	}
	root.Remove(saveMarker)
	for _, d := range []string{optimMDir, optimVDir, "optim", extraDir} {
		root.Remove(filepath.FromSlash(d))
	}
	os.Remove(tmp) // only if empty
}
