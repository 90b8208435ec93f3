package infile

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
)

// Open opens the file at path for reading if it is a regular file of at
// most limit bytes, and returns it with its size. It never blocks: the
// file is checked before it is opened, opened without waiting for a writer
// (O_NONBLOCK where the system has it) and checked again once open, so a
// named pipe swapped in between is refused too. Errors name the path.
func Open(path string, limit int64) (*os.File, int64, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, 0, err // *fs.PathError: names the path
	}
	if err := check(path, fi, limit); err != nil {
		return nil, 0, err
	}
	f, err := os.OpenFile(path, os.O_RDONLY|openNonblock, 0)
	if err != nil {
		return nil, 0, err
	}
	st, err := f.Stat()
	if err == nil {
		err = check(path, st, limit)
	}
	if err != nil {
		f.Close()
		return nil, 0, err
	}
	return f, st.Size(), nil
}

// ReadFile reads the whole file at path, which must be a regular file of
// at most limit bytes (see [Open]).
func ReadFile(path string, limit int64) ([]byte, error) {
	f, size, err := Open(path, limit)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b := make([]byte, size)
	if _, err := io.ReadFull(f, b); err != nil {
		if errors.Is(err, io.ErrUnexpectedEOF) {
			return nil, fmt.Errorf("%s: shrank while being read", path)
		}
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	var one [1]byte
	if n, _ := f.Read(one[:]); n > 0 {
		return nil, fmt.Errorf("%s: grew while being read", path)
	}
	return b, nil
}

// check refuses fi unless it is a regular file of at most limit bytes.
func check(path string, fi fs.FileInfo, limit int64) error {
	m := fi.Mode()
	if !m.IsRegular() {
		return fmt.Errorf("%s: %s, want a regular file", path, kind(m))
	}
	if fi.Size() > limit {
		return fmt.Errorf("%s: %d bytes, more than the limit of %d", path, fi.Size(), limit)
	}
	return nil
}

// kind names a file type that is not a regular file.
func kind(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe (FIFO)"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a device"
	case m&fs.ModeSocket != 0:
		return "a socket"
	}
	return fmt.Sprintf("not a regular file (mode %v)", m)
}
