// Package infile opens the input files gdattn reads by path — corpora,
// books, drawings, feature caches, .npy arrays, results files — the way
// package checkpoint opens a checkpoint's files: only a regular file
// (after following symbolic links) of at most a given size is read, so a
// device such as /dev/zero, a directory, or a named pipe with no writer is
// an error naming the path, at once, instead of an endless read, an
// out-of-memory crash or a process blocked forever; a file larger than its
// limit is refused before anything is allocated.
package infile
