package npy_test

import (
	"bytes"
	"fmt"

	"github.com/gdattn/gdattn/graph/npy"
)

func Example() {
	a := &npy.Array{Shape: []int{2, 3}, Dtype: npy.Float64, F64: []float64{1, 2, 3, 4, 5, 6}}
	var buf bytes.Buffer
	if err := npy.Write(&buf, a); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("%d bytes, header %q...\n", buf.Len(), buf.String()[10:69])
	b, err := npy.Read(&buf)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(b.Shape, b.Dtype, b.F64)
	// Output:
	// 176 bytes, header "{'descr': '<f8', 'fortran_order': False, 'shape': (2, 3), }"...
	// [2 3] float64 [1 2 3 4 5 6]
}
