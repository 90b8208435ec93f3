// Package readme holds no code: its test extracts every ```go block of the
// repository's README.md, builds it as a program in a module outside the
// repository that uses the checkout (as README's "Install" says), and runs
// it, so that every Go snippet a reader pastes compiles and runs.
//
// A block is either a whole file (it starts with "package") or the body of
// main: the test adds package main, func main and the imports of the
// packages the block names (gdattn's, gorgonia as G, tensor, and fmt, os,
// math, rand (math/rand/v2), filepath, strings, errors, json). A block runs
// in an empty directory beside a link "../shared" to the checkout's
// ../shared (the shared data), with a 5-minute limit; one that mentions
// ../shared is skipped when that folder is missing. Add a block to README
// and it is tested: nothing else to register.
//
// TestReadmeShape keeps README a page read in one sitting: at most 250
// lines, with Install, Quick start and the three recipes (classifier,
// language model, regression) starting within the first 120.
package readme
