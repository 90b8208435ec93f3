package cnn

import (
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"time"

	"github.com/gdattn/gdattn/data"
	"github.com/gdattn/gdattn/graph"
	"github.com/gdattn/gdattn/train"
	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"
	G "gorgonia.org/gorgonia"
)

// TrainConfig sets the classifier's training. Zero fields mean the
// documented defaults.
type TrainConfig struct {
	// Epochs over the training images (default 8).
	Epochs int
	// LR is AdamW's peak learning rate (default 2e-3), with a linear
	// warm-up over the first 2% of the steps and a cosine decay to LR/20.
	LR float64
	// WeightDecay is AdamW's decoupled decay (default 1e-4; -1 for none).
	WeightDecay float64
	// Val is the number of images per class held out of training to
	// measure the validation accuracy after every epoch (default 0: none).
	// They are the last Val images of each class.
	Val int
	// Shift is the largest random translation, in pixels, applied to each
	// training image (default 2; -1 for none): augmentation against the
	// small number of images per class.
	Shift int
	// Seed seeds the minibatch order and the shifts.
	Seed uint64
	// Progress receives progress output (nil: silent).
	Progress io.Writer
}

func (c TrainConfig) withDefaults() TrainConfig {
	if c.Epochs == 0 {
		c.Epochs = 8
	}
	if c.LR == 0 {
		c.LR = 2e-3
	}
	if c.WeightDecay == 0 {
		c.WeightDecay = 1e-4
	} else if c.WeightDecay < 0 {
		c.WeightDecay = 0
	}
	if c.Shift == 0 {
		c.Shift = 2
	} else if c.Shift < 0 {
		c.Shift = 0
	}
	return c
}

// TrainResult records the training curve.
type TrainResult struct {
	Loss   []float64 // mean training loss of each epoch
	ValAcc []float64 // validation top-1 accuracy after each epoch (empty without Val)
	Images int       // training images per epoch
}

// Train trains n as a classifier on px, images of the Side×Side pixels of
// class k labelled k (px.Classes() must equal Classes). Only px is read: the
// caller hands it the training classes alone (data.Features.Subset), so no
// other class can reach the network.
func Train(n *Net, px *data.Features, cfg TrainConfig) (*TrainResult, error) {
	cfg = cfg.withDefaults()
	if err := checkImages(n, px); err != nil {
		return nil, err
	}
	if px.Classes() != n.Cfg.Classes {
		return nil, fmt.Errorf("cnn: Train: %d classes of images for a %d-class network", px.Classes(), n.Cfg.Classes)
	}
	if cfg.Epochs < 0 || cfg.LR < 0 || cfg.Val < 0 {
		return nil, fmt.Errorf("cnn: Train: Epochs, LR, Val = %d, %v, %d, want >= 0", cfg.Epochs, cfg.LR, cfg.Val)
	}
	var fit, val [][2]int // (class, index)
	for c, cnt := range px.Counts {
		if cnt <= cfg.Val {
			return nil, fmt.Errorf("cnn: Train: class %d has %d images, want more than Val = %d", c, cnt, cfg.Val)
		}
		for i := 0; i < cnt; i++ {
			if i < cnt-cfg.Val {
				fit = append(fit, [2]int{c, i})
			} else {
				val = append(val, [2]int{c, i})
			}
		}
	}
	B := n.Batch
	steps := cfg.Epochs * ((len(fit) + B - 1) / B)
	vm, err := graph.NewMachine(n.s, n.Loss, graph.MachineOptions{})
	if err != nil {
		return nil, err
	}
	defer vm.Close()
	tr, err := train.NewTrainer(vm, train.Config{
		Optimizer: "adamw", WeightDecay: cfg.WeightDecay,
		Schedule: train.WarmupCosine(cfg.LR, steps/50, steps, cfg.LR/20),
		Progress: cfg.Progress, Total: steps, Label: "cnn", ProgressEvery: max(1, steps/20),
	})
	if err != nil {
		return nil, err
	}
	rng := rand.New(rand.NewPCG(cfg.Seed, 0xc22))
	S := n.Cfg.Side
	x := make([]float64, B*S*S)
	y := make([]float64, B*n.Cfg.Classes)
	res := &TrainResult{Images: len(fit)}
	for ep := 1; ep <= cfg.Epochs; ep++ {
		perm := rng.Perm(len(fit))
		sum, cnt := 0.0, 0
		for lo := 0; lo < len(fit); lo += B {
			clear(y)
			for k := 0; k < B; k++ {
				ci := fit[perm[(lo+k)%len(fit)]]
				dx, dy := 0, 0
				if cfg.Shift > 0 {
					dx, dy = rng.IntN(2*cfg.Shift+1)-cfg.Shift, rng.IntN(2*cfg.Shift+1)-cfg.Shift
				}
				shifted(x[k*S*S:(k+1)*S*S], px.Vector(ci[0], ci[1]), S, dx, dy)
				y[k*n.Cfg.Classes+ci[0]] = 1
			}
			if err := graph.SetValue(n.X, x); err != nil {
				return nil, err
			}
			if err := graph.SetValue(n.Target, y); err != nil {
				return nil, err
			}
			l, err := tr.Step()
			if err != nil {
				return nil, fmt.Errorf("cnn: Train: epoch %d: %w", ep, err)
			}
			sum += l
			cnt++
		}
		res.Loss = append(res.Loss, sum/float64(cnt))
		msg := fmt.Sprintf("cnn: epoch %d/%d: train loss %.4f", ep, cfg.Epochs, sum/float64(cnt))
		if len(val) > 0 {
			acc, err := accuracy(n, px, val)
			if err != nil {
				return nil, err
			}
			res.ValAcc = append(res.ValAcc, acc)
			msg += fmt.Sprintf(", validation top-1 %.4f (%d images)", acc, len(val))
		}
		if cfg.Progress != nil {
			fmt.Fprintln(cfg.Progress, msg)
		}
	}
	return res, nil
}

// accuracy returns the top-1 accuracy of n on the listed images.
func accuracy(n *Net, px *data.Features, idx [][2]int) (float64, error) {
	correct := 0
	err := forEachBatch(n, px, idx, n.Logits, nil, func(k int, ci [2]int, logits []float64) {
		best := 0
		for c, v := range logits {
			if v > logits[best] {
				best = c
			}
		}
		if best == ci[0] {
			correct++
		}
	})
	return float64(correct) / float64(len(idx)), err
}

// Extract runs n on every image of px (any classes: the network is only
// evaluated) and returns the penultimate-layer features, with px's classes,
// counts and names; Dim = Hidden. Progress goes to progress (nil: silent):
// a bar on a terminal, a line every 5 s otherwise.
func Extract(n *Net, px *data.Features, progress io.Writer) (*data.Features, error) {
	if err := checkImages(n, px); err != nil {
		return nil, err
	}
	var idx [][2]int
	for c, cnt := range px.Counts {
		for i := 0; i < cnt; i++ {
			idx = append(idx, [2]int{c, i})
		}
	}
	h := n.Cfg.Hidden
	out := &data.Features{Dim: h, MaxCount: px.MaxCount, Counts: append([]int(nil), px.Counts...),
		X: make([]float64, px.Classes()*px.MaxCount*h)}
	if px.Names != nil {
		out.Names = append([]string(nil), px.Names...)
	}
	err := forEachBatch(n, px, idx, n.Features, progress, func(_ int, ci [2]int, f []float64) {
		copy(out.X[(ci[0]*px.MaxCount+ci[1])*h:], f)
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// forEachBatch evaluates node (B, K) on the listed images in minibatches
// and calls fn with each image's row.
func forEachBatch(n *Net, px *data.Features, idx [][2]int, node *G.Node, progress io.Writer, fn func(k int, ci [2]int, row []float64)) error {
	vm, err := graph.NewMachine(n.s, nil, graph.MachineOptions{NoGrad: true, Outputs: G.Nodes{node}})
	if err != nil {
		return err
	}
	defer vm.Close()
	B, S := n.Batch, n.Cfg.Side
	K := node.Shape()[1]
	x := make([]float64, B*S*S)
	start, last := time.Now(), time.Now()
	var bar *progressbar.ProgressBar
	if f, ok := progress.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		bar = progressbar.NewOptions(len(idx), progressbar.OptionSetWriter(progress),
			progressbar.OptionSetDescription("cnn: extract"), progressbar.OptionShowCount(),
			progressbar.OptionSetItsString("img"), progressbar.OptionShowIts(),
			progressbar.OptionOnCompletion(func() { fmt.Fprintln(progress) }))
	}
	for lo := 0; lo < len(idx); lo += B {
		for k := 0; k < B; k++ {
			ci := idx[min(lo+k, len(idx)-1)] // pad the last minibatch
			copy(x[k*S*S:(k+1)*S*S], px.Vector(ci[0], ci[1]))
		}
		if err := graph.SetValue(n.X, x); err != nil {
			return err
		}
		if err := vm.Run(); err != nil {
			return err
		}
		vals, err := graph.Values(node)
		if err != nil {
			return err
		}
		for k := 0; k < B && lo+k < len(idx); k++ {
			fn(lo+k, idx[lo+k], vals[k*K:(k+1)*K])
		}
		done := min(lo+B, len(idx))
		if bar != nil {
			bar.Set(done)
		} else if progress != nil && (time.Since(last) > 5*time.Second || done == len(idx)) {
			last = time.Now()
			fmt.Fprintf(progress, "cnn: extract %d/%d images (%.0f%%, %.1fs)\n", done, len(idx), 100*float64(done)/float64(len(idx)), time.Since(start).Seconds())
		}
	}
	return nil
}

// checkImages checks that px holds Side×Side images.
func checkImages(n *Net, px *data.Features) error {
	if n == nil {
		return fmt.Errorf("cnn: network is nil")
	}
	if err := px.Validate(); err != nil {
		return fmt.Errorf("cnn: images: %w", err)
	}
	if px.Dim != n.Cfg.Side*n.Cfg.Side {
		return fmt.Errorf("cnn: images of %d pixels, want %d×%d = %d", px.Dim, n.Cfg.Side, n.Cfg.Side, n.Cfg.Side*n.Cfg.Side)
	}
	return nil
}

// shifted writes img (S×S, row-major) translated by (dx, dy) pixels into dst,
// filling uncovered pixels with 0.
func shifted(dst, img []float64, S, dx, dy int) {
	if dx == 0 && dy == 0 {
		copy(dst, img)
		return
	}
	clear(dst)
	for r := 0; r < S; r++ {
		sr := r - dy
		if sr < 0 || sr >= S {
			continue
		}
		for c := 0; c < S; c++ {
			sc := c - dx
			if sc >= 0 && sc < S {
				dst[r*S+c] = img[sr*S+sc]
			}
		}
	}
}
