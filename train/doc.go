// Package train trains gdattn's models: a [Trainer] that runs a gradient
// graph.Machine and updates its parameters in place with Adam or AdamW
// (learning-rate [Schedule]s, global-norm clipping, a NaN/Inf guard on the
// loss, the gradients and the update itself), checkpoints of parameters and
// optimiser state through package checkpoint, and a [Runner] that fits and
// evaluates any in-context classifier satisfying the small [Model]
// interface (gd.Model and tf.Model do) on sets of contexts (*data.Batch).
//
// Shapes follow gdattn's conventions: a context set holds B contexts of T =
// N+1 positions (N labelled pairs, then the query) with d covariates; a
// model's minibatch is (B, T, d) row-major, its query logits (B, C).
//
// The Runner does not assume classification: a model that also implements
// [RealValuedModel] and reports RealValued (gd.Model with the Gaussian
// likelihood of Appendix G, tf.Regressor) is fed real-valued targets from a
// regression batch (data.Batch with DY > 0, targets R (B, T, d_y)), trained
// on its query loss (the mean squared error) and evaluated by the MSE of
// its predictions (B, d_y) against the Bayes error the batch carries
// (Metrics.Regression, Metrics.MSE, Metrics.Oracle). Top-1 and NLL remain
// the metrics of categorical models.
//
// Data flows one way: data -> model (gd, tf) -> losses -> train. Models do
// not import train; they satisfy [Model] structurally.
//
// # Host and device
//
// With a device executor (graph/cuda) the update runs on the device
// ([graph.DeviceUpdater]) and, with resident parameters, the host values go
// stale between updates. The Trainer is the one place that syncs them:
// [Trainer.Save] and [Trainer.State] sync first, and [Runner] syncs before
// every evaluation, so a checkpoint or an evaluation never sees stale
// values. Call [Trainer.SyncParams] before reading parameter values yourself.
//
// # Fitting an in-context classifier
//
//	s, _ := graph.NewScope(graph.Float64, 1)
//	m, _ := gd.NewModel(s, gd.Config{D: 10, DPrime: 5, C: 25, N: 10}, 64)
//	r, err := train.NewRunner(m, train.RunnerConfig{
//		Optim: train.Config{LR: 1e-2, Progress: os.Stderr, Total: train.Steps(trainSet.B, 64, 30)},
//	})
//	defer r.Close()
//	err = r.Fit(trainSet, train.FitConfig{Epochs: 30, Seed: 1})
//	met, err := r.Evaluate(testSet) // Metrics{Top1, NLL, Oracle, N, Seconds}
//	err = m.Save("ckpt")             // gd.Load("ckpt", 64) rebuilds the model
//
// [Runner.FitCurve] evaluates a held-out set after every few epochs. To keep
// the optimiser state too, save through the trainer with the model's own
// config object, which gd.Load and tf.Load read:
//
//	cfg, err := m.SavedConfig()
//	err = r.Trainer().Save("ckpt", cfg, nil)
//
// For a single training run, or a model that Load returned, the package
// functions [Fit], [Predict] and [Evaluate] build the Runner, use it and
// close it:
//
//	err := train.Fit(m, trainSet, train.RunnerConfig{Optim: train.Config{LR: 1e-2}}, train.FitConfig{Epochs: 30, Seed: 1})
//	err = m.Save("ckpt")
//	l, err := gd.Load("ckpt", 64)
//	met, err := train.Evaluate(l, testSet)
//
// Build every model you train in its own graph.NewScope: once one model's
// training machine exists in a graph, Gorgonia's differentiation refuses a
// training machine for another model of the same graph (sub-scopes share
// their graph).
//
// # Training a language model
//
// [LMTrainer] is the loop of examples/language for any [LM] (gd.LM, tf.GPT):
// random windows of T+1 ids a step (a function of the seed and the step, so
// that a resumed run is bit-exact), AdamW with warmup + cosine and clipping,
// the NaN/Inf guard, validation perplexity every EvalEvery steps, progress
// with ETA, checkpoints (parameters, optimiser state, the model's text
// codec) every CkptEvery steps; Fit checks every id of its streams before
// the first step. [Generator] generates from a generation graph (greedy,
// top-k sampling with temperature, beam search; contexts cropped to the
// window), from ids or text, on a key/value cache of the model's positions
// (package kvcache; docs/generation.md: a new token costs one position's
// work, and several goroutines may each use their own Generator over one
// model), stopping by default at the model's end-of-text (data.StopNever()
// for exactly MaxNew ids) and saying why it stopped; its Probs and LogProbs
// give the next-token distribution:
//
//	m, _ := gd.NewLM(s, gd.LMConfig{Vocab: ds.Codec.Vocab.Size(), DPrime: 64, Context: 64, Heads: 4}, gd.LMOptions{Batch: 16})
//	t, _ := train.NewLMTrainer(m, train.LMConfig{Steps: 1500, Warmup: 100, LR: 1e-3, MinLR: 1e-4, ClipNorm: 1, Dir: "ckpt"})
//	err := t.FitText(ds)                                              // ds: *data.TextData
//	g, err := gd.LoadLM("ckpt", gd.LMOptions{Batch: 1, Next: true}) // or m.Rebuild(...)
//	out, err := train.GenerateText(g, "Once upon a time", data.DecodeConfig{Strategy: data.DecodeBeam})
//	fmt.Println(out.Text, out.Reason) // the continuation, and "stop id" (end-of-text) or "MaxNew"
//
// To continue a run, read its checkpoint once and hand it to the model's
// loader and to the trainer:
//
//	c, err := checkpoint.Read("ckpt")
//	family, step, err := train.DecodeRun(c.Header(), &run) // the program's own settings (LMConfig.Run)
//	m, err := gd.LMFromCheckpoint(c, gd.LMOptions{Batch: 16})
//	t, err := train.NewLMTrainer(m, cfg)
//	err = t.ResumeFrom(c)
//
// # Any graph
//
//	m, _ := graph.NewMachine(s, loss, graph.MachineOptions{})
//	tr, _ := train.NewTrainer(m, train.Config{Optimizer: "adamw", Schedule: train.WarmupCosine(1e-3, 100, 2000, 1e-4), ClipNorm: 1})
//	for step := 0; step < 2000; step++ {
//		// feed the minibatch with graph.SetValue, then
//		loss, err := tr.Step()
//	}
//	err = tr.Save(dir, cfg, nil) // resume: checkpoint.Read, Checkpoint.Apply, tr.SetState(*c.Optim)
package train
