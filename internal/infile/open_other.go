//go:build !unix

package infile

const openNonblock = 0
