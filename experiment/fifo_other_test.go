//go:build !unix

package experiment

import "errors"

func syscallMkfifo(string) error { return errors.New("no named pipes") }
