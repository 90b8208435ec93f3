package checkpoint

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
)

// A save's temporary directories carry its writer's identity in their
// names, so that they are marked from the instant they exist (os.Mkdir
// creates a name atomically) until the instant they are gone (the last
// rmdir): the new copy being written, dir+".tmp-"+tag, which after the
// exchange holds the replaced checkpoint under the same name, and on
// systems without an exchange the old copy set aside, dir+".old-"+tag.
// tag is "g" + pid + "-" + start + "-" + boot + "-" + 16 random hex digits:
// the writer's process id, start time (on Linux field 22 of
// /proc/<pid>/stat, clock ticks since boot; empty where unknown) and boot
// id (/proc/sys/kernel/random/boot_id without its dashes; empty where
// unknown). A later save removes such a directory when it can prove its
// writer dead ([writerDead]); there is no window in which a save's
// directory exists without its mark.
var tagPattern = regexp.MustCompile(`^g([1-9][0-9]{0,9})-([0-9]{0,20})-([0-9a-f]{0,32})-[0-9a-f]{16}$`)

// saveMarker is the marker file that earlier versions of Save kept in their
// temporary directories (a JSON markerJSON). Save no longer writes it; a
// leftover holding one is still recognised and removed.
const saveMarker = ".gdattn-save"

// markerFormat identifies a save marker.
const markerFormat = "gdattn-save"

// markerJSON is the content of a save marker, and the identity a tag
// carries.
type markerJSON struct {
	Format string `json:"format"` // markerFormat
	PID    int    `json:"pid"`
	Start  string `json:"start"`
	Boot   string `json:"boot"`
}

// saveTag returns a fresh tag naming this process (see tagPattern).
func saveTag() (string, error) {
	var r [8]byte
	if _, err := rand.Read(r[:]); err != nil {
		return "", err
	}
	pid := os.Getpid()
	start, _ := processStart(pid)
	if _, err := strconv.ParseUint(start, 10, 64); err != nil || len(start) > 20 {
		start = ""
	}
	boot := strings.ReplaceAll(bootID(), "-", "")
	if len(boot) > 32 || strings.Trim(boot, "0123456789abcdef") != "" {
		boot = ""
	}
	return fmt.Sprintf("g%d-%s-%s-%s", pid, start, boot, hex.EncodeToString(r[:])), nil
}

// parseTag returns the identity a tag names; ok is false for a name that is
// not a tag.
func parseTag(tag string) (m markerJSON, ok bool) {
	sub := tagPattern.FindStringSubmatch(tag)
	if sub == nil {
		return m, false
	}
	pid, err := strconv.Atoi(sub[1])
	if err != nil {
		return m, false
	}
	return markerJSON{Format: markerFormat, PID: pid, Start: sub[2], Boot: sub[3]}, true
}

// mkdirTagged creates the directory parent/prefix+tag for this process,
// with a fresh tag, atomically (os.Mkdir; never an existing one).
func mkdirTagged(parent, prefix string) (string, error) {
	for range 10 {
		tag, err := saveTag()
		if err != nil {
			return "", err
		}
		p := filepath.Join(parent, prefix+tag)
		err = os.Mkdir(p, 0o755)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		return p, err
	}
	return "", fmt.Errorf("no free temporary name %s* in %s", prefix, parent)
}

// reserveTagged returns a fresh name parent/prefix+tag for this process
// without creating it (os.Rename creates it atomically).
func reserveTagged(parent, prefix string) (string, error) {
	tag, err := saveTag()
	if err != nil {
		return "", err
	}
	return filepath.Join(parent, prefix+tag), nil
}

// writeSaveMarker writes a marker file of this process into dir, as earlier
// versions of Save did (tests use it to make such leftovers).
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

// writerDead reports whether the process that m names is provably gone: it
// ran in an earlier boot, or no process has its id, or the process that has
// it started at another time (the id was reused). Where start times are
// unknown, only a free process id proves it.
func writerDead(m markerJSON) bool {
	if m.PID <= 0 {
		return false
	}
	if b := strings.ReplaceAll(bootID(), "-", ""); b != "" && m.Boot != "" && b != strings.ReplaceAll(m.Boot, "-", "") {
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

// removeLeftovers removes what earlier saves to dir left when their
// process died (kill -9, a crash, a power loss): the siblings
// dir+".tmp-"+tag and dir+".old-"+tag whose tag proves their writer dead,
// and dir+".tmp-*" directories holding a valid marker file of an earlier
// version whose writer is dead; in them only what Save writes
// (config.json, the .npy files of the checkpoint layout, its folders, a
// marker file). Anything else, and the directories holding it, stays; so
// does everything else beside dir. Save calls it once its own checkpoint
// is in place at dir, so a leftover is removed only when a newer complete
// checkpoint exists. Errors are ignored: a leftover that cannot be removed
// harms nothing.
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
		if !e.IsDir() {
			continue // IsDir is false for a symbolic link
		}
		name := e.Name()
		var tag string
		switch {
		case strings.HasPrefix(name, base+".tmp-"):
			tag = name[len(base+".tmp-"):]
		case strings.HasPrefix(name, base+".old-"):
			tag = name[len(base+".old-"):]
		default:
			continue
		}
		p := filepath.Join(parent, name)
		if m, ok := parseTag(tag); ok {
			if writerDead(m) {
				removeSaveFiles(p)
			}
			continue
		}
		if strings.HasPrefix(name, base+".tmp-") {
			removeMarkedLeftover(p)
		}
	}
}

// removeMarkedLeftover removes the leftover save directory tmp of an earlier
// version of Save if its marker file proves its writer dead.
func removeMarkedLeftover(tmp string) {
	root, err := os.OpenRoot(tmp)
	if err != nil {
		return
	}
	raw, err := readRegular(root, saveMarker, 4096, "a save marker's size")
	root.Close()
	if err != nil {
		return
	}
	var m markerJSON
	if decodeStrict(raw, &m) != nil || m.Format != markerFormat || !writerDead(m) {
		return
	}
	removeSaveFiles(tmp)
}

// removeSaveFiles deletes in dir what a save writes: config.json and the
// .npy files of the checkpoint layout, the marker file of an earlier
// version (last of the files, so that an interrupted removal stays marked),
// then the layout's folders and dir itself, each only if then empty.
func removeSaveFiles(dir string) {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return
	}
	layout := map[string]bool{".": true, optimMDir: true, optimVDir: true, extraDir: true}
	var files []string
	fs.WalkDir(root.FS(), ".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !d.Type().IsRegular() {
			return nil
		}
		if (path == configFile || strings.HasSuffix(path, ".npy")) && layout[filepath.ToSlash(filepath.Dir(path))] {
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
	root.Close()
	os.Remove(dir) // only if empty
}
