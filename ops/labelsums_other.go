//go:build !amd64 || purego

package ops

const haveLabelSums32 = false

// labelSums32 is never called where haveLabelSums32 is false.
func labelSums32(rows, src *float32, lab *int32, n, dp int) {}
