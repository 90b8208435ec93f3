// Package cuda is gdattn's device layer (doc written below).
package cuda

//go:generate go run ./internal/gen
