// Package ops holds every hand-written Gorgonia op of gdattn: the forward
// computation, the backward pass and the CPU kernels behind them (matrix
// products on package gemm, the table exp Exp32).
//
// # What an op is here
//
// An op is a Go type implementing Gorgonia's G.Op (and G.SDOp for its
// backward pass) together with a constructor that checks its inputs and
// returns the node: MatMul(a, b, transA, transB) builds one *MatMulOp node.
// Constructors return an error for bad input (nil nodes, shapes, dtypes,
// kinds); an op's Do returns an error for bad values (an id out of range, a
// label out of range). Every op computes in float32 and float64; float32
// exponentials go through Exp32 (relative error below 1e-9), except where
// an op's option or doc says otherwise (SparseCrossEntropyOptions.Float32:
// a single-precision exponential, at most one ulp).
//
// The backward pass of an op is its own op type (or the same type with a
// Backward flag), built by SymDiff. Gradient ops have no gradient of their
// own: gdattn trains with first derivatives only, and differentiating a
// gradient (a second derivative) is an error, not a silent zero. Fused ops (KernelOp, KernelApplyOp,
// HeadOp, ExpectationOp, SparseCrossEntropyOp) keep intermediate values of the
// forward run for the backward run of the same run, checking that they
// belong to the values they are given and recomputing them otherwise.
//
// # The ops
//
//	MatMul, BatchedMatMul          op(a)·op(b), transposes handed to gemm (MatMulOp, BatchedMatMulOp)
//	ConcatLast                     concatenation along the last axis (ConcatLastOp)
//	Reshape, Slice                 copies that never alias their input (ReshapeOp, SliceOp)
//	SoftMax, LogSoftMax            stable softmax over the last axis (SoftMaxOp, SoftMaxGradOp)
//	KernelWeights, …OfData         attention weights κ(q, k) of five kernels (KernelOp, KernelGradOp)
//	KernelApplyOfData              κ(q, k)·r for data q, k, a sequence at a time (KernelApplyOp, …GradOp)
//	AttentionHead                  a whole dot-product kernel head (HeadOp, HeadGradOp, HeadParamGradOp)
//	AttentionHeadQuery             the same head at the last position only, for a loss that reads the query (HeadOp)
//	AttentionHeadQueryRegrouped    the query head with its values as (Σ_i w_i z_i)·U, O(B·T·D) (HeadOp; an option: other rounding)
//	Expectation                    E = softmax(f K) Vᵀ (ExpectationOp, …GradOp, …ParamGradOp)
//	Gather, GatherCentered         rows of a table, row-sparse gradient (GatherOp, ScatterOp)
//	GatherCols                     columns of a matrix by label ids, −1 a zero row: the encoder's w_{e,y} (GatherColsOp, ScatterColsOp)
//	TiedLogits                     h wᵀ for a tied output layer (TiedLogitsOp, three modes)
//	SparseCrossEntropy             mean NLL of integer labels (SparseCrossEntropyOp; an option: the softmax in float32 arithmetic)
//	SoftmaxCrossEntropy            mean cross-entropy against dense targets in one op, p − t backward (SoftmaxCrossEntropyOp; an option: other rounding)
//	LayerNorm                      layer norm over the last axis, bit for bit the Gorgonia graph it replaces (LayerNormOp, …GradOp, …MeanGradOp, …ParamGradOp)
//	GELU                           the tanh-approximation GELU, bit for bit the Gorgonia chain it replaces (GELUOp, GELUGradOp)
//
// Narrow products (a few output columns, a long inner dimension: the GD
// blocks' d' = 5 residual columns, the heads' outputs) run several rows at
// a time on AVX2 kernels of this package (narrow_amd64.s) with the same
// chains of fused multiply-adds as gemm's row kernels, so the same bits;
// the kernels' row work (maximum, exponentials and their sum, the
// normalisation) runs in AVX2 too, bit for bit what the scalar loops give.
//
// Besides the ops: Gemm and MulAddRow (the matrix kernels the ops run on),
// HaveRowKernel, Exp32, and MarkData/IsData, which tell the ops that an
// input is data (a minibatch input or a constant) so that no gradient is
// computed for it. MarkData lives here, not in package graph, because only
// the ops read it (graph's Machine never does).
//
// # Shapes
//
// Token tensors are (B, T, D): B sequences of T positions with D features;
// matrices act on the right (x·W). Kernel weights are (B, Tq, Tk), one row
// per query. MatMul treats a tensor of rank above 2 as the matrix of its
// rows ((B, T, K) is (B·T, K)), so token tensors need no reshape around a
// projection. Logits are (N, C) rows, labels (N) ints with −1 for a
// position not scored.
//
// # Backends
//
// A device backend (graph/cuda) reads an op through its exported type and
// read-only accessors, with a Go type switch:
//
//	switch op := n.Op().(type) {
//	case *ops.MatMulOp:
//		gemm(op.TransA(), op.TransB())
//	case *ops.KernelGradOp:
//		kernelGrad(op.Forward().Kind(), op.Forward().LearnG(), op.Wrt())
//	}
//
// Fields are unexported: a new option of an op comes with an accessor, and
// a backend that must handle it breaks at compile time (graph/cuda is built
// by CI with -tags gdcuda and -tags cudaemu) instead of computing something
// else. The gradient ops point to their forward op (HeadGradOp.Head,
// ExpectationGradOp.Forward), whose pointer identifies the fused op's
// shared buffers.
//
// # Adding an op
//
// A new op goes in a file of its own here: the constructor (validating its
// inputs), the op type with unexported fields and read-only accessors for
// what a backend needs, Do for float32 and float64, SymDiff with a gradient
// op, and a test with a finite-difference gradient check
// (graph/graphtest.CheckGrad and CheckGrad32). A backend that does not know
// the type runs it on the host (graph/cuda's CPU fallback).
//
// ops imports Gorgonia, its tensor and type packages, gonum, package gemm
// (gdattn's GEMM, which imports nothing of gdattn) and the standard library
// only; it knows neither graph nor layers.
//
// # Matrix products and Gorgonia's BLAS
//
// Every matrix product of the ops (MatMul, BatchedMatMul, TiedLogits, the
// fused heads' products, Gemm, MulAddRow) runs on package gemm. Importing
// ops also hands gemm.Implementation to Gorgonia (G.Use, once, in an init),
// so G.Mul, G.BatchedMatMul and package tensor's MatMul run on it too. With
// the openblas build tag ops imports graph/openblas instead, the leaf cgo
// package that hands OpenBLAS to Gorgonia; BLASName says which is in use.
package ops
