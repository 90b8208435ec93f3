// Command gen generates, from the kernel sources in graph/cuda/kernels/*.cu,
// the two files that let both backends of package cuda launch kernels by
// name:
//
//   - emu_kernels.c (build tag cudaemu): includes every kernel file and
//     defines gdattn_emu_dispatch, which unpacks a launch's void** argument
//     array and calls the kernel by its index in the table;
//   - ptx_kernels.go: kernelTable, every kernel's name, source file and
//     parameter kinds, which both backends use to validate Launch arguments,
//     and kernelSourceHash, the SHA-256 of the kernel sources that
//     scripts/build-ptx.sh also writes into kernels/gdattn.ptx so that a test
//     can tell a stale PTX.
//
// It runs the C preprocessor (gcc -E, or $CC) over each file with GDATTN_GEN
// defined, so kernels may be written through macros (GDATTN_FLOATS) and are
// parsed after expansion: kernels/emu.h then turns __global__ into a marker
// that precedes each kernel's "void name(params)", and GDATTN_WARP_MARK into
// a second marker before it on warp kernels (GDATTN_WARP_KERNEL), which the
// table flags so that the backends launch a warp per work item.
//
// Usage, from graph/cuda (go generate ./graph/cuda does this):
//
//	go run ./internal/gen          # regenerate both files
//	go run ./internal/gen -check   # fail if either file is out of date
//	go run ./internal/gen -hash    # print kernelSourceHash
package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"go/format"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
)

const (
	marker     = "gdattn_kernel_marker"
	warpMarker = "gdattn_warp_marker" // just before marker on warp kernels (GDATTN_WARP_KERNEL)
)

// param is one kernel parameter after macro expansion.
type param struct {
	name  string
	kind  string // Go constant name of the argKind: argPtr, argInt32, ...
	ctype string // the C type as written, e.g. "const float *"
}

// kernel is one kernel signature.
type kernel struct {
	name   string
	file   string
	warp   bool // one warp per work item (GDATTN_WARP_KERNEL)
	params []param
}

func main() {
	dir := flag.String("dir", ".", "the graph/cuda directory")
	check := flag.Bool("check", false, "report whether the generated files are up to date instead of writing them")
	hash := flag.Bool("hash", false, "print the SHA-256 of the kernel sources and exit")
	flag.Parse()
	if err := run(*dir, *check, *hash); err != nil {
		fmt.Fprintln(os.Stderr, "gen:", err)
		os.Exit(1)
	}
}

func run(dir string, check, printHash bool) error {
	files, err := filepath.Glob(filepath.Join(dir, "kernels", "*.cu"))
	if err != nil {
		return err
	}
	sort.Strings(files)
	if len(files) == 0 {
		return fmt.Errorf("no kernels/*.cu under %s", dir)
	}
	h, err := sourceHash(dir)
	if err != nil {
		return err
	}
	if printHash {
		fmt.Println(h)
		return nil
	}
	var kernels []kernel
	seen := map[string]string{}
	for _, f := range files {
		ks, err := parseFile(dir, f)
		if err != nil {
			return err
		}
		for _, k := range ks {
			if other, ok := seen[k.name]; ok {
				return fmt.Errorf("kernel %s defined in both %s and %s", k.name, other, k.file)
			}
			seen[k.name] = k.file
			kernels = append(kernels, k)
		}
	}
	cSrc := emitC(files, kernels)
	goSrc, err := emitGo(kernels, h)
	if err != nil {
		return err
	}
	outputs := []struct {
		path string
		data []byte
	}{
		{filepath.Join(dir, "emu_kernels.c"), cSrc},
		{filepath.Join(dir, "ptx_kernels.go"), goSrc},
	}
	var stale []string
	for _, o := range outputs {
		if check {
			old, err := os.ReadFile(o.path)
			if err != nil || !bytes.Equal(old, o.data) {
				stale = append(stale, filepath.Base(o.path))
			}
			continue
		}
		if err := os.WriteFile(o.path, o.data, 0o644); err != nil {
			return err
		}
	}
	if len(stale) > 0 {
		return fmt.Errorf("%s out of date with kernels/*.cu: run go generate ./graph/cuda", strings.Join(stale, " and "))
	}
	return nil
}

// sourceHash is the SHA-256 over kernels/*.cu and kernels/*.h, each file
// contributing its base name, a newline, its length, a newline and its bytes,
// in name order.
func sourceHash(dir string) (string, error) {
	var names []string
	for _, pat := range []string{"*.cu", "*.h"} {
		m, err := filepath.Glob(filepath.Join(dir, "kernels", pat))
		if err != nil {
			return "", err
		}
		names = append(names, m...)
	}
	sort.Slice(names, func(i, j int) bool { return filepath.Base(names[i]) < filepath.Base(names[j]) })
	s := sha256.New()
	for _, n := range names {
		b, err := os.ReadFile(n)
		if err != nil {
			return "", err
		}
		fmt.Fprintf(s, "%s\n%d\n", filepath.Base(n), len(b))
		s.Write(b)
	}
	return hex.EncodeToString(s.Sum(nil)), nil
}

// parseFile preprocesses one kernel file and returns its kernels in source
// order. Repeated identical declarations (a prototype, then the definition)
// count once.
func parseFile(dir, path string) ([]kernel, error) {
	cc := os.Getenv("CC")
	if cc == "" {
		cc = "gcc"
	}
	cmd := exec.Command(cc, "-E", "-P", "-x", "c", "-std=gnu11", "-DGDATTN_GEN",
		"-I", filepath.Join(dir, "kernels"), path)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("%s -E %s: %v\n%s", cc, path, err, stderr.String())
	}
	base := filepath.Base(path)
	src := string(out)
	var ks []kernel
	seen := map[string]string{}
	for {
		i := strings.Index(src, marker)
		if i < 0 {
			break
		}
		warp := strings.HasSuffix(strings.TrimRight(src[:i], " \t\r\n"), warpMarker)
		src = src[i+len(marker):]
		k, rest, err := parseSignature(src)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", base, err)
		}
		src = rest
		k.file = base
		k.warp = warp
		if len(k.params) == 0 || k.params[0].name != "n" || k.params[0].kind != "argInt64" {
			return nil, fmt.Errorf("%s: kernel %s: the first parameter must be long long n, the work-item count", base, k.name)
		}
		sig := fmt.Sprint(k.warp, k.params)
		if prev, ok := seen[k.name]; ok {
			if prev != sig {
				return nil, fmt.Errorf("%s: kernel %s declared twice with different parameters or warp forms", base, k.name)
			}
			continue
		}
		seen[k.name] = sig
		ks = append(ks, k)
	}
	return ks, nil
}

// parseSignature parses "void name(params)" at the start of s (after the
// marker) and returns the kernel and the text after the closing parenthesis.
func parseSignature(s string) (kernel, string, error) {
	s = strings.TrimLeft(s, " \t\r\n")
	if !strings.HasPrefix(s, "void") {
		return kernel{}, "", fmt.Errorf("a __global__ function must return void (GDATTN_KERNEL): %.60q", s)
	}
	s = strings.TrimLeft(s[len("void"):], " \t\r\n")
	open := strings.IndexByte(s, '(')
	if open < 0 {
		return kernel{}, "", errors.New("kernel without a parameter list")
	}
	name := strings.TrimSpace(s[:open])
	if !isIdent(name) {
		return kernel{}, "", fmt.Errorf("cannot parse kernel name %q", name)
	}
	closing := strings.IndexByte(s[open:], ')')
	if closing < 0 {
		return kernel{}, "", fmt.Errorf("kernel %s: unterminated parameter list", name)
	}
	list := strings.TrimSpace(s[open+1 : open+closing])
	rest := s[open+closing+1:]
	k := kernel{name: name}
	if list == "" || list == "void" {
		return k, rest, nil
	}
	for _, p := range strings.Split(list, ",") {
		pp, err := parseParam(p)
		if err != nil {
			return kernel{}, "", fmt.Errorf("kernel %s: %w", name, err)
		}
		k.params = append(k.params, pp)
	}
	return k, rest, nil
}

// parseParam classifies one parameter declaration such as "const float *x".
func parseParam(p string) (param, error) {
	p = strings.TrimSpace(p)
	if strings.ContainsAny(p, "[]()") {
		return param{}, fmt.Errorf("parameter %q: arrays and function pointers are not supported", p)
	}
	fields := strings.Fields(strings.ReplaceAll(p, "*", " * "))
	if len(fields) < 2 {
		return param{}, fmt.Errorf("parameter %q has no name", p)
	}
	name := fields[len(fields)-1]
	if !isIdent(name) {
		return param{}, fmt.Errorf("parameter %q has no name", p)
	}
	typ := fields[:len(fields)-1]
	ctype := strings.ReplaceAll(strings.Join(typ, " "), " *", "*")
	var words []string
	ptr := false
	for _, w := range typ {
		switch w {
		case "*":
			ptr = true
		case "const", "volatile", "restrict", "__restrict", "__restrict__":
		default:
			words = append(words, w)
		}
	}
	if ptr {
		return param{name: name, kind: "argPtr", ctype: ctype}, nil
	}
	switch strings.Join(words, " ") {
	case "int", "signed int", "signed":
		return param{name: name, kind: "argInt32", ctype: ctype}, nil
	case "long long", "long long int", "signed long long", "signed long long int":
		return param{name: name, kind: "argInt64", ctype: ctype}, nil
	case "float":
		return param{name: name, kind: "argFloat32", ctype: ctype}, nil
	case "double":
		return param{name: name, kind: "argFloat64", ctype: ctype}, nil
	}
	return param{}, fmt.Errorf("parameter %q: type %q is not one of pointer, int, long long, float, double", p, strings.Join(words, " "))
}

func isIdent(s string) bool {
	if s == "" {
		return false
	}
	for i, r := range s {
		ok := r == '_' || (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z') || (i > 0 && r >= '0' && r <= '9')
		if !ok {
			return false
		}
	}
	return true
}

// cArg is how the dispatcher reads a parameter's value from its slot.
var cArg = map[string]string{
	"argPtr":     "*(void **)a[%d]",
	"argInt32":   "*(int *)a[%d]",
	"argInt64":   "*(long long *)a[%d]",
	"argFloat32": "*(float *)a[%d]",
	"argFloat64": "*(double *)a[%d]",
}

func emitC(files []string, ks []kernel) []byte {
	var b bytes.Buffer
	b.WriteString("//go:build cudaemu\n\n")
	b.WriteString("// Code generated by go run ./internal/gen from kernels/*.cu; DO NOT EDIT.\n\n")
	b.WriteString("// The emulator backend compiles every kernel file as C (kernels/emu.h) and\n")
	b.WriteString("// calls kernels by their index in kernelTable (ptx_kernels.go).\n\n")
	for _, f := range files {
		fmt.Fprintf(&b, "#include \"kernels/%s\"\n", filepath.Base(f))
	}
	b.WriteString("\n// gdattn_emu_dispatch calls kernel k with the parameter values a[i] point to;\n")
	b.WriteString("// it returns -1 for an unknown k.\n")
	b.WriteString("int gdattn_emu_dispatch(int k, void **a) {\n")
	b.WriteString("    (void)a;\n    switch (k) {\n")
	for i, k := range ks {
		args := make([]string, len(k.params))
		for j, p := range k.params {
			args[j] = fmt.Sprintf(cArg[p.kind], j)
		}
		fmt.Fprintf(&b, "    case %d:\n        %s(%s);\n        return 0;\n", i, k.name, strings.Join(args, ", "))
	}
	b.WriteString("    }\n    return -1;\n}\n")
	b.WriteString("\n// gdattn_emu_warp[k] is 1 if kernel k is a warp kernel (one warp per work\n")
	b.WriteString("// item), else 0; the fake driver (testdata/fakecuda.c) checks launch\n")
	b.WriteString("// geometry with it.\n")
	b.WriteString("const unsigned char gdattn_emu_warp[] = {")
	for i, k := range ks {
		if i > 0 {
			b.WriteString(", ")
		}
		if k.warp {
			b.WriteString("1")
		} else {
			b.WriteString("0")
		}
	}
	b.WriteString("};\n")
	return b.Bytes()
}

func emitGo(ks []kernel, hash string) ([]byte, error) {
	var b bytes.Buffer
	b.WriteString("// Code generated by go run ./internal/gen from kernels/*.cu; DO NOT EDIT.\n\n")
	b.WriteString("package cuda\n\n")
	b.WriteString("// kernelSourceHash is the SHA-256 of kernels/*.cu and kernels/*.h; it must\n")
	b.WriteString("// match the one scripts/build-ptx.sh wrote into kernels/gdattn.ptx.\n")
	fmt.Fprintf(&b, "const kernelSourceHash = %q\n\n", hash)
	b.WriteString("// kernelTable lists every kernel of kernels/*.cu in emulator dispatch order;\n")
	b.WriteString("// warp marks the warp kernels (GDATTN_WARP_KERNEL: one warp per work item).\n")
	b.WriteString("var kernelTable = []kernelSig{\n")
	for _, k := range ks {
		fmt.Fprintf(&b, "\t{name: %q, file: %q, ", k.name, k.file)
		if k.warp {
			b.WriteString("warp: true, ")
		}
		b.WriteString("params: []kernelParam{")
		for j, p := range k.params {
			if j > 0 {
				b.WriteString(", ")
			}
			fmt.Fprintf(&b, "{%q, %s, %q}", p.name, p.kind, p.ctype)
		}
		b.WriteString("}},\n")
	}
	b.WriteString("}\n")
	return format.Source(b.Bytes())
}
