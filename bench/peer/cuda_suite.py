#!/usr/bin/env python3
"""PyTorch side of the GPU comparison (scripts/gpu-device.sh, stage peer).

Times the training step of peer.py's models (the same models, sizes,
parameter initialisation and optimiser settings as `peer.py time`) for a
list of workloads in one process, on one device, in up to four
configurations per workload, PyTorch's ordinary one and its best:

    eager                    peer.py's optimiser as is (AdamW or Adam,
                             PyTorch's default foreach implementation), for
                             each implementation of --impls (mirror,
                             idiomatic)
    eager-fused              idiomatic, the optimiser with fused=True (one
                             kernel for all parameters)
    compile-reduce-overhead  idiomatic, fused optimiser, and the whole step
    compile-max-autotune     compiled with torch.compile in that mode: the
                             loss (forward and, through AOTAutograd, its
                             backward) as one compiled function, the gradient
                             clipping and optimiser step as another;
                             "reduce-overhead" replays both as CUDA graphs,
                             "max-autotune" also autotunes the products and
                             fused kernels (and uses CUDA graphs too)

Every configuration is built and warmed up once (its first step is the
compilation), timed for a first round at once, and kept; then rounds 2..R
run over all kept configurations in turn (interleaved), so that a drift of
the machine touches every configuration alike. Each round times at least
--min-steps steps and --min-time seconds and gives its median; a figure is
the median of its rounds' medians, with their min and max as its spread.

One JSON line per configuration after each of its rounds (a later line
supersedes the earlier ones; one line per round too, kind torch_round, for
the raw record):

    {"kind": "torch_time", "workload": ..., "mode": ..., "impl": ...,
     "optimizer": "AdamW(fused=True)"|..., "rounds": n,
     "round_median_ms": [...], "median_ms": ..., "spread_ms": [min, median, max],
     "min_ms": ..., "mean_ms": ..., "first_step_ms": ..., "steps": ...,
     "peak_device_bytes": ...,   # torch.cuda.max_memory_allocated over the first
                                 # round (after the warm-up), less what was
                                 # allocated before this configuration was built
                                 # (CPU: VmHWM)
     "peak_reserved_bytes": ..., # the same for torch.cuda.max_memory_reserved
                                 # (CUDA graph pools: a replay allocates nothing)
     "build_peak_device_bytes": ..., # the warm-up's, compilation included
     "device": ..., "torch": ..., "matmul_precision": ..., "error": ...}

and per workload, once all rounds are done, {"kind": "torch_best", ...}:
the configuration with the least median (PyTorch's best here).

Workloads come as lines "NAME<TAB>peer.py time arguments" on stdin or in
--workloads FILE (what `gpu peer-args` prints). Float32, training mode. TF32
stays off (torch.set_float32_matmul_precision("highest"), PyTorch's
default), so that both sides compute float32 products in float32.

Every step ends with loss.item(), which waits for the GPU, so a step's wall
time is its device time plus the launch overhead, as gdattn's Trainer.Step
(which downloads the loss) measures its own. A configuration that fails
(out of memory, a compile error) gives a line with "error" and the others
still run. A feature this PyTorch lacks (torch.compile before 2.0, a fused
optimiser on this device, CUDA graphs off a GPU) skips its configurations
with a torch_note line naming it; exit status 0 unless a configuration
failed. When torch or the device is unusable, one line of kind
"torch_unavailable" with the reason is printed, and the exit status is 3.

--self-check runs a small GD LM and GPT on the CPU through every
configuration this PyTorch supports, one short round each, and checks that
each one's losses over its first steps agree with eager's: the rehearsal of
this script on a machine without a GPU (torch 1.13 there has no
torch.compile; the note says so).
"""

import argparse
import contextlib
import gc
import json
import os
import shlex
import signal
import statistics
import sys
import time
import types

STARTED = time.perf_counter()  # --deadline counts from here (importing torch takes seconds)
HERE = os.path.dirname(os.path.abspath(__file__))


def unavailable(reason):
    print(json.dumps({"kind": "torch_unavailable", "reason": reason}), flush=True)
    print("cuda_suite: " + reason, file=sys.stderr, flush=True)
    sys.exit(3)


try:
    import torch
    import torch.nn.functional as F
except Exception as e:  # noqa: BLE001 - any import failure means no PyTorch here
    unavailable(f"no usable PyTorch in {sys.executable}: {type(e).__name__}: {e}")

sys.path.insert(0, HERE)
try:
    import peer  # noqa: E402  (bench/peer/peer.py: the models)
except Exception as e:  # noqa: BLE001 - e.g. numpy missing
    unavailable(f"bench/peer/peer.py does not import in {sys.executable}: {type(e).__name__}: {e}")

COMPILE_MODES = ("reduce-overhead", "max-autotune")


def emit(obj):
    print(json.dumps(obj), flush=True)


def note(text):
    emit({"kind": "torch_note", "note": text})
    print("cuda_suite: " + text, file=sys.stderr, flush=True)


def parse_workloads(text):
    out = []
    for line in text.splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        name, _, args = line.partition("\t")
        out.append((name.strip(), shlex.split(args)))
    return out


def time_args(argv):
    """peer.py's `time` arguments parsed into its namespace."""
    t = argparse.ArgumentParser(prog="peer.py time")
    t.add_argument("--model", required=True, choices=["gd", "tf"] + list(peer.LM_MODELS))
    t.add_argument("--depth", type=int, default=1)
    t.add_argument("--cross", action="store_true")
    t.add_argument("--batch", type=int, required=True)
    for k in ("n", "d", "c", "vocab", "context", "heads"):
        t.add_argument("--" + k, type=int, default=0)
    t.add_argument("--dprime", type=int, required=True)
    t.add_argument("--ff", action="store_true")
    return t.parse_args(argv)


def make_optimizer(params, lm, fused):
    """peer.py's optimiser (peer.lm_optimizer for the language models, Adam
    lr 1e-3 otherwise), with fused=True when fused."""
    if not fused:
        return peer.lm_optimizer(params) if lm else torch.optim.Adam(params, lr=1e-3)
    if lm:
        decay = [t for t in params if t.dim() >= 2]
        rest = [t for t in params if t.dim() < 2]
        return torch.optim.AdamW([{"params": decay, "weight_decay": 1e-2}, {"params": rest, "weight_decay": 0.0}],
                                 lr=1e-3, betas=(0.9, 0.999), eps=1e-8, fused=True)
    return torch.optim.Adam(params, lr=1e-3, fused=True)


def optimizer_name(lm, fused):
    return ("AdamW" if lm else "Adam") + ("(fused=True)" if fused else "(foreach default)")


def fresh(fn, tag):
    """fn with a code object of its own: torch.compile caches compiled code
    per code object, so each configuration compiles its own, in its own
    mode, and none evicts another's."""
    code = fn.__code__.replace(co_name=f"{fn.__name__}_{tag}")
    return types.FunctionType(code, fn.__globals__, code.co_name, fn.__defaults__, fn.__closure__)


def memory(dev):
    if dev.type == "cuda":
        return torch.cuda.memory_allocated(dev), torch.cuda.memory_reserved(dev)
    return 0, 0


def peak_memory(dev):
    if dev.type == "cuda":
        return torch.cuda.max_memory_allocated(dev), torch.cuda.max_memory_reserved(dev)
    return peer.vm_hwm(), 0


class Config:
    """One workload in one configuration: built once, timed in rounds."""

    def __init__(self, name, argv, mode, impl, fused):
        self.name, self.argv, self.mode, self.impl, self.fused = name, argv, mode, impl, fused
        self.rounds, self.all_steps = [], []
        self.step = None
        self.info = {}

    def key(self):
        return f"{self.mode} {self.impl} {self.name}"

    def build(self, dev, warmup, tag):
        """Builds the model, optimiser and step function, runs the warm-up
        steps (the first one compiles) and records the first step's time and
        the peak memory; returns the losses of the warm-up steps."""
        a = time_args(self.argv)
        if hasattr(torch, "set_default_device"):
            torch.set_default_device("cpu")  # built on the CPU from the seeded CPU generator, then moved
        dtype = torch.float32
        gen = torch.Generator().manual_seed(1)
        lm = a.model in peer.LM_MODELS
        if lm:
            m = peer.build_lm(a, dtype, gen, self.impl)
            inp = torch.randint(0, a.vocab, (a.batch, a.context), generator=gen)
            target = torch.randint(0, a.vocab, (a.batch * a.context,), generator=gen)
        else:
            m = peer.build(a, dtype, gen, self.impl)
            T = a.n + 1
            x = torch.rand(a.batch, T, a.d, dtype=dtype, generator=gen) * 2 - 1
            y = torch.randint(0, a.c, (a.batch, T), generator=gen)
            inp = peer.inputs(x, y, a.c, dtype)
            target = inp.target
        gc.collect()
        if dev.type == "cuda":
            torch.cuda.synchronize(dev)
            torch.cuda.reset_peak_memory_stats(dev)
        base_alloc, base_res = memory(dev)
        m = peer.to_device(m, dev)
        inp, target = peer.to_device(inp, dev), peer.to_device(target, dev)
        if hasattr(torch, "set_default_device"):
            torch.set_default_device(dev)  # tensors the forward pass creates (peer.py's cmd_time does the same)
        params = list(m.params.values())
        for t in params:
            t.requires_grad_(True)
        opt = make_optimizer(params, lm, self.fused)
        self.info["optimizer"] = optimizer_name(lm, self.fused)

        def loss_fn(inp, target):
            return F.cross_entropy(m.logits(inp), target, ignore_index=-1)

        def opt_step():
            if lm:
                torch.nn.utils.clip_grad_norm_(params, 1.0)
            opt.step()

        compiled = self.mode.startswith("compile-")
        if compiled:
            cmode = self.mode[len("compile-"):]
            loss_fn = torch.compile(fresh(loss_fn, tag), mode=cmode)
            opt_c = torch.compile(fresh(opt_step, tag), mode=cmode)
            mark = getattr(getattr(torch, "compiler", None), "cudagraph_mark_step_begin", None)
            self.info["compiled"] = "loss+backward, clip+optimizer step"

            def opt_step():  # noqa: F811 - the compiled step, or eager where it does not compile
                nonlocal opt_c
                if opt_c is None:
                    return eager_opt_step()
                try:
                    return opt_c()
                except Exception as e:  # noqa: BLE001 - a compile failure of the optimiser step only
                    if self.all_steps or self.info.get("first_step_ms") is not None:
                        raise
                    opt_c = None
                    self.info["compiled"] = "loss+backward (the optimizer step runs eager: " + \
                        f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"[:200] + ")"
                    return eager_opt_step()

            def eager_opt_step():
                if lm:
                    torch.nn.utils.clip_grad_norm_(params, 1.0)
                opt.step()

        def step():
            if compiled and mark is not None:
                mark()
            loss = loss_fn(inp, target)
            if compiled:
                loss_v = loss.detach().clone()  # a CUDA graph's output is overwritten by its next replay
            else:
                loss_v = loss
            loss.backward()
            opt_step()
            opt.zero_grad(set_to_none=True)
            return loss_v.item()

        if compiled:
            # The first calls compile (the optimiser step twice: its state
            # appears at the first), the next ones record the CUDA graphs.
            warmup = max(warmup, 5)
        losses = []
        t0 = time.perf_counter()
        losses.append(step())  # eager: allocations, cuBLAS handles; compiled: the compilation
        self.info["first_step_ms"] = 1e3 * (time.perf_counter() - t0)
        for _ in range(warmup - 1):
            losses.append(step())
        if dev.type == "cuda":
            torch.cuda.synchronize(dev)
            peak, reserved = peak_memory(dev)
            self.info["build_peak_device_bytes"] = peak - base_alloc  # compilation and autotuning included
            torch.cuda.reset_peak_memory_stats(dev)
        self.base = (base_alloc, base_res)
        self.step = step
        return losses

    def record_memory(self, dev):
        """The peak since the warm-up (the steady step: what this
        configuration holds and allocates), less what was allocated before
        it was built; reserved likewise (the caching allocator's segments, CUDA
        graph pools included: a replayed graph allocates nothing)."""
        peak, reserved = peak_memory(dev)
        if dev.type == "cuda":
            peak, reserved = peak - self.base[0], reserved - self.base[1]
        self.info["peak_device_bytes"], self.info["peak_reserved_bytes"] = peak, reserved

    def time_round(self, min_steps, min_time):
        ds, total = [], 0.0
        while len(ds) < min_steps or total < min_time:
            t0 = time.perf_counter()
            self.step()
            d = time.perf_counter() - t0
            ds.append(d)
            total += d
        self.rounds.append(1e3 * statistics.median(ds))
        self.all_steps.extend(ds)
        return self.rounds[-1]

    def record(self, common):
        r = {"kind": "torch_time", "workload": self.name, "mode": self.mode, "impl": self.impl, **common, **self.info}
        if self.rounds:
            ds = self.all_steps
            r.update({"rounds": len(self.rounds), "round_median_ms": self.rounds,
                      "median_ms": statistics.median(self.rounds),
                      "spread_ms": [min(self.rounds), statistics.median(self.rounds), max(self.rounds)],
                      "min_ms": 1e3 * min(ds), "mean_ms": 1e3 * sum(ds) / len(ds), "steps": len(ds)})
        return r

    def release(self):
        self.step = None


class BuildTimeout(Exception):
    """A configuration's build and first round ran past their time budget."""


@contextlib.contextmanager
def build_alarm(seconds):
    """Raises BuildTimeout in the main thread after seconds (> 0; none
    otherwise): Python runs signal handlers between bytecodes, and
    torch.compile's tracing and code generation are Python."""
    if seconds <= 0 or not hasattr(signal, "setitimer"):
        yield
        return

    def fire(signum, frame):
        raise BuildTimeout(f"build and first round past their budget of {seconds:.1f} s")

    old = signal.signal(signal.SIGALRM, fire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


def feature_notes(dev, want_fused, compile_modes):
    """What this PyTorch and device support: returns (fused ok, the compile
    modes to run) and prints a note for each skipped one."""
    fused_ok = False
    if want_fused:
        try:
            p = torch.zeros(2, device=dev, requires_grad=True)
            p.grad = torch.ones(2, device=dev)
            o = torch.optim.AdamW([p], lr=1e-3, fused=True)
            o.step()
            fused_ok = True
        except Exception as e:  # noqa: BLE001 - TypeError (no such argument), RuntimeError (not on this device)
            note(f"fused AdamW unavailable in torch {torch.__version__} on {dev}: {type(e).__name__}: "
                 f"{str(e).splitlines()[0] if str(e) else ''}"[:300] + "; eager-fused and compiled configurations skipped")
    modes = []
    if compile_modes:
        if not hasattr(torch, "compile"):
            note(f"torch {torch.__version__} has no torch.compile: modes {', '.join(compile_modes)} skipped")
        elif not fused_ok:
            note("compiled modes need the fused optimiser: " + ", ".join(compile_modes) + " skipped")
        else:
            modes = list(compile_modes)
            if dev.type != "cuda":
                note(f"on {dev} torch.compile uses no CUDA graphs: reduce-overhead and max-autotune differ from a GPU's")
    return fused_ok, modes


def configs_for(work, impls, fused, modes, compile_names):
    """The configurations in build order: eager ones first (cheap), then
    eager-fused, then the compiled ones, workload by workload in the order
    given (the most important first)."""
    out = [Config(n, a, "eager", impl, False) for impl in impls for n, a in work]
    if fused:
        out += [Config(n, a, "eager-fused", "idiomatic", True) for n, a in work]
    args = dict(work)
    for n in [n for n, _ in work] if compile_names is None else [n for n in compile_names if n in args]:
        out += [Config(n, args[n], "compile-" + m, "idiomatic", True) for m in modes]
    return out


def run_suite(dev, work, o, common):
    fused, modes = feature_notes(dev, o.fused, [m for m in o.compile_modes.split(",") if m])
    compile_names = None if o.compile_workloads == "all" else [n for n in o.compile_workloads.split(",") if n]
    if compile_names is not None and modes:
        known = {n for n, _ in work}
        for n in compile_names:
            if n not in known:
                note(f"--compile-workloads: {n} is not among the workloads: not compiled")
    impls = [i for i in o.impls.split(",") if i]
    configs = configs_for(work, impls, fused, modes, compile_names)
    if hasattr(torch, "_dynamo"):
        # Each configuration compiles its own code objects (fresh), so these
        # limits only guard against a recompile per call.
        torch._dynamo.config.cache_size_limit = max(torch._dynamo.config.cache_size_limit, 64)
        if hasattr(torch._dynamo.config, "accumulated_cache_size_limit"):
            torch._dynamo.config.accumulated_cache_size_limit = max(torch._dynamo.config.accumulated_cache_size_limit, 1024)
    kept, failed = [], 0

    def elapsed():
        return time.perf_counter() - STARTED

    def round_cost():
        return sum(statistics.median(c.all_steps) * max(o.min_steps, 1) + o.min_time for c in kept)

    for i, c in enumerate(configs):
        # Room for this build and its first round, and the later rounds of
        # everything kept.
        if o.deadline > 0:
            need = (o.rounds - 1) * round_cost() + (o.compile_margin if c.mode.startswith("compile-") else 5) + o.min_time
            if elapsed() + need > o.deadline:
                note(f"{c.key()}: not run: {elapsed():.0f} s gone of --deadline {o.deadline:g} s, and its build and "
                     f"first round with the later rounds of the {len(kept)} configurations kept need about {need:.0f} s")
                continue
        # A build (a compilation, an autotuning) that would eat the later
        # rounds' time is interrupted: it fails with BuildTimeout and the
        # rounds of what was kept still run.
        budget = o.deadline - elapsed() - (o.rounds - 1) * round_cost() if o.deadline > 0 else 0
        try:
            with build_alarm(budget):
                c.build(dev, o.warmup, i)
                ms = c.time_round(o.min_steps, o.min_time)
            c.record_memory(dev)
            kept.append(c)
            line = f"torch {c.mode:24s} {c.impl:9s} {c.name:20s} round 1 median {ms:9.3f} ms  " + \
                f"peak {c.info['peak_device_bytes'] / 2**20:8.1f} MiB  first step {c.info['first_step_ms'] / 1e3:.1f} s"
            emit({"kind": "torch_round", "workload": c.name, "mode": c.mode, "impl": c.impl, "round": 1, "median_ms": ms})
            emit(c.record(common))
        except Exception as e:  # noqa: BLE001 - report and go on with the next configuration
            failed += 1
            c.release()
            r = c.record(common)
            r["error"] = f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"[:500]
            emit(r)
            line = f"torch {c.mode:24s} {c.impl:9s} {c.name:20s} FAILED: {r['error']}"
        print(line, file=sys.stderr, flush=True)
        gc.collect()
    for rnd in range(2, o.rounds + 1):
        for c in kept:
            cost = statistics.median(c.all_steps) * o.min_steps + o.min_time
            if o.deadline > 0 and elapsed() + cost > o.deadline:
                note(f"round {rnd} of {c.key()}: not run, it would end past --deadline {o.deadline:g} s")
                continue
            try:
                ms = c.time_round(o.min_steps, o.min_time)
                emit({"kind": "torch_round", "workload": c.name, "mode": c.mode, "impl": c.impl, "round": rnd, "median_ms": ms})
                emit(c.record(common))  # supersedes the configuration's earlier line
            except Exception as e:  # noqa: BLE001
                failed += 1
                note(f"round {rnd} of {c.key()} failed: {type(e).__name__}: {e}"[:500])
    best = {}
    for c in kept:
        r = c.record(common)
        print(f"torch {c.mode:24s} {c.impl:9s} {c.name:20s} median {r['median_ms']:9.3f} ms "
              f"[{r['spread_ms'][0]:.3f} - {r['spread_ms'][2]:.3f}] over {r['rounds']} rounds", file=sys.stderr, flush=True)
        if c.name not in best or r["median_ms"] < best[c.name]["median_ms"]:
            best[c.name] = r
    for name, _ in work:
        if name in best:
            b = best[name]
            emit({"kind": "torch_best", "workload": name, "mode": b["mode"], "impl": b["impl"],
                  "optimizer": b.get("optimizer", ""), "median_ms": b["median_ms"], "spread_ms": b["spread_ms"],
                  "peak_device_bytes": b["peak_device_bytes"], "peak_reserved_bytes": b["peak_reserved_bytes"]})
    return kept, failed


SELF_CHECK = [
    ("language-tiny/gdlm", "--model gdlm --depth 1 --batch 2 --dprime 16 --vocab 37 --context 12 --heads 2"),
    ("language-tiny/gpt", "--model gpt --depth 1 --batch 2 --dprime 16 --vocab 37 --context 12 --heads 2"),
    ("synthetic-tiny/gd", "--model gd --depth 2 --batch 4 --dprime 6 --n 8 --d 5 --c 4"),
]


def self_check(o, common):
    """Every configuration this PyTorch supports on the CPU, on small
    models: its warm-up losses must match eager's (the same model, data and
    optimiser settings), to 1e-4 relative."""
    dev = torch.device("cpu")
    fused, modes = feature_notes(dev, True, list(COMPILE_MODES))
    work = [(n, shlex.split(a)) for n, a in SELF_CHECK]
    bad = 0
    ran = []
    for c in configs_for(work, ["mirror", "idiomatic"], fused, modes, None):
        try:
            losses = c.build(dev, 3, len(ran))
            c.time_round(2, 0)
            c.record_memory(dev)
        except Exception as e:  # noqa: BLE001
            print(f"cuda_suite self-check: {c.key()}: FAILED: {type(e).__name__}: {e}", file=sys.stderr)
            bad += 1
            continue
        ran.append((c, losses))
        emit(c.record(common))
    ref = {c.name: l for c, l in ran if c.mode == "eager" and c.impl == "idiomatic"}
    for c, losses in ran:
        want = ref.get(c.name)
        if want is None or len(want) != len(losses):
            print(f"cuda_suite self-check: {c.key()}: no eager losses to compare with", file=sys.stderr)
            bad += 1
            continue
        worst = max(abs(a - b) / max(abs(b), 1e-12) for a, b in zip(losses, want))
        ok = worst <= 1e-4
        print(f"cuda_suite self-check: {c.key():45s} losses {['%.6f' % x for x in losses]} "
              f"vs eager {worst:.2g} relative: {'ok' if ok else 'MISMATCH'}", file=sys.stderr)
        bad += 0 if ok else 1
    skipped = [m for m in COMPILE_MODES if m not in modes] + ([] if fused else ["eager-fused"])
    print(f"cuda_suite self-check: {len(ran)} configurations ran, {bad} failed; skipped here: "
          f"{', '.join(skipped) if skipped else 'none'}", file=sys.stderr)
    return 1 if bad else 0


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--device", default="cuda", help="torch device (cuda; cpu only to rehearse the script)")
    ap.add_argument("--workloads", default="-", help="file of NAME<TAB>ARGS lines, - for stdin")
    ap.add_argument("--impls", default="mirror,idiomatic", help="peer.py implementations to time in eager mode")
    ap.add_argument("--fused", action="store_true", help="also time eager with the fused optimiser (idiomatic)")
    ap.add_argument("--compile-modes", default="",
                    help="comma-separated torch.compile modes of the whole step (of " + ", ".join(COMPILE_MODES) + "); "
                         "they use the fused optimiser (empty: none)")
    ap.add_argument("--compile", action="store_true", help="the same as --fused --compile-modes " + ",".join(COMPILE_MODES))
    ap.add_argument("--compile-workloads", default="all",
                    help="comma-separated workloads to compile, in this order (all: every one, in the workloads' order)")
    ap.add_argument("--compile-margin", type=float, default=90,
                    help="seconds a compiled configuration's build may take; none starts with less left before --deadline")
    ap.add_argument("--rounds", type=int, default=3, help="timing rounds per configuration (the first right after its build)")
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--min-steps", type=int, default=10, help="steps per round (at least)")
    ap.add_argument("--min-time", type=float, default=0.3, help="seconds per round (at least)")
    ap.add_argument("--threads", type=int, default=0, help="torch CPU threads (0: PyTorch's default)")
    ap.add_argument("--self-check", action="store_true", help="check every configuration against eager on small CPU models and exit")
    limit = float(os.environ.get("STAGE_LIMIT", "0") or 0)  # scripts/gpu-device.sh's limit of this stage
    ap.add_argument("--deadline", type=float, default=max(limit - 5, 0),
                    help="seconds after which no further build or round starts (0: none; default: $STAGE_LIMIT - 5); "
                         "the rest is reported as not run")
    o = ap.parse_args()
    if o.warmup < 1 or o.min_steps < 1 or o.min_time < 0 or o.rounds < 1:
        ap.error("--warmup, --min-steps and --rounds must be >= 1, --min-time >= 0")
    if o.compile:
        o.fused = True
        o.compile_modes = o.compile_modes or ",".join(COMPILE_MODES)
    for m in [m for m in o.compile_modes.split(",") if m]:
        if m not in COMPILE_MODES:
            ap.error(f"--compile-modes: unknown mode {m!r} (want {', '.join(COMPILE_MODES)})")
    if o.compile_modes:
        o.fused = True
    if o.threads > 0:
        torch.set_num_threads(o.threads)
    torch.set_float32_matmul_precision("highest")  # no TF32 (PyTorch's default, made explicit)
    if o.self_check:
        common = {"device": "cpu", "torch": torch.__version__, "matmul_precision": torch.get_float32_matmul_precision()}
        sys.exit(self_check(o, common))
    text = sys.stdin.read() if o.workloads == "-" else open(o.workloads).read()
    work = parse_workloads(text)
    if not work:
        ap.error("no workloads given")
    dev = torch.device(o.device)
    if dev.type == "cuda" and not torch.cuda.is_available():
        unavailable(f"PyTorch {torch.__version__} in {sys.executable} sees no CUDA device "
                    f"(built with CUDA {torch.version.cuda}); no PyTorch timings")
    desc = str(dev) + (" (" + torch.cuda.get_device_name(dev) + ")" if dev.type == "cuda" else "")
    common = {"device": desc, "torch": torch.__version__, "matmul_precision": torch.get_float32_matmul_precision()}
    _, failed = run_suite(dev, work, o, common)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
