#!/usr/bin/env python3
"""PyTorch side of the GPU comparison (scripts/gpu-device.sh, stage 3).

Times the training step of peer.py's models (the same models, sizes,
parameter initialisation and optimisers as `peer.py time`) for a list of
workloads in one process, on one device, and prints one JSON line per
(workload, mode, implementation) as soon as it is measured:

    {"kind": "torch_time", "workload": ..., "mode": "eager"|"compile",
     "impl": "mirror"|"idiomatic", "median_ms": ..., "mean_ms": ...,
     "min_ms": ..., "first_step_ms": ..., "steps": ...,
     "peak_device_bytes": ...,   # torch.cuda.max_memory_allocated (CPU: VmHWM)
     "peak_reserved_bytes": ..., # torch.cuda.max_memory_reserved
     "device": ..., "torch": ..., "matmul_precision": ..., "error": ...}

Workloads come as lines "NAME<TAB>peer.py time arguments" on stdin or in
--workloads FILE (what `gpu peer-args` prints). Float32, training mode.
Modes: eager (PyTorch's default execution), and with --compile also
torch.compile of the loss (forward and, through AOTAutograd, backward; the
optimiser step stays eager), timed after its compiling first call. TF32
stays off (torch.set_float32_matmul_precision("highest"), PyTorch's
default), so that both sides compute float32 products in float32.

Every step ends with loss.item(), which waits for the GPU, so a step's wall
time is its device time plus the launch overhead, as gdattn's Trainer.Step
(which downloads the loss) measures its own. A workload that fails (out of
memory, a compile error) gives a line with "error" and the others still run.
When torch or the device is unusable, one line of kind "torch_unavailable"
with the reason is printed, and the exit status is 3.
"""

import argparse
import gc
import json
import os
import shlex
import statistics
import sys
import time

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


def peak_bytes(dev):
    if dev.type == "cuda":
        return torch.cuda.max_memory_allocated(dev), torch.cuda.max_memory_reserved(dev)
    return peer.vm_hwm(), 0


def measure(name, argv, dev, mode, impl, o):
    a = time_args(argv)
    if hasattr(torch, "set_default_device"):
        torch.set_default_device("cpu")  # built on the CPU from the seeded CPU generator, then moved
    dtype = torch.float32
    gen = torch.Generator().manual_seed(1)
    lm = a.model in peer.LM_MODELS
    if lm:
        m = peer.build_lm(a, dtype, gen, impl)
        inp = torch.randint(0, a.vocab, (a.batch, a.context), generator=gen)
        target = torch.randint(0, a.vocab, (a.batch * a.context,), generator=gen)
    else:
        m = peer.build(a, dtype, gen, impl)
        T = a.n + 1
        x = torch.rand(a.batch, T, a.d, dtype=dtype, generator=gen) * 2 - 1
        y = torch.randint(0, a.c, (a.batch, T), generator=gen)
        inp = peer.inputs(x, y, a.c, dtype)
        target = inp.target
    if dev.type == "cuda":
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats(dev)
    m = peer.to_device(m, dev)
    inp, target = peer.to_device(inp, dev), peer.to_device(target, dev)
    if hasattr(torch, "set_default_device"):
        torch.set_default_device(dev)  # tensors the forward pass creates (peer.py's cmd_time does the same)
    params = list(m.params.values())
    for t in params:
        t.requires_grad_(True)
    opt = peer.lm_optimizer(params) if lm else torch.optim.Adam(params, lr=1e-3)

    def loss_fn(inp, target):
        return F.cross_entropy(m.logits(inp), target, ignore_index=-1)

    if mode == "compile":
        torch._dynamo.reset()  # a fresh cache per workload: no recompile limit, no stale guards
        loss_fn = torch.compile(loss_fn)

    def step():
        opt.zero_grad(set_to_none=True)
        loss = loss_fn(inp, target)
        loss.backward()
        if lm:
            torch.nn.utils.clip_grad_norm_(params, 1.0)
        opt.step()
        return loss.item()

    t0 = time.perf_counter()
    step()  # eager: allocations, cuBLAS handles; compile: the compilation
    first = time.perf_counter() - t0
    for _ in range(o.warmup - 1):
        step()
    ds, total = [], 0.0
    while len(ds) < o.min_steps or total < o.min_time:
        t0 = time.perf_counter()
        step()
        d = time.perf_counter() - t0
        ds.append(d)
        total += d
    peak, reserved = peak_bytes(dev)
    return {"median_ms": 1e3 * statistics.median(ds), "mean_ms": 1e3 * total / len(ds), "min_ms": 1e3 * min(ds),
            "first_step_ms": 1e3 * first, "steps": len(ds), "peak_device_bytes": peak, "peak_reserved_bytes": reserved}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--device", default="cuda", help="torch device (cuda; cpu only to rehearse the script)")
    ap.add_argument("--workloads", default="-", help="file of NAME<TAB>ARGS lines, - for stdin")
    ap.add_argument("--impls", default="mirror,idiomatic", help="peer.py implementations to time in eager mode")
    ap.add_argument("--compile", action="store_true", help="also time torch.compile (the idiomatic implementation)")
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--min-steps", type=int, default=10)
    ap.add_argument("--min-time", type=float, default=1.0)
    ap.add_argument("--threads", type=int, default=0, help="torch CPU threads (0: PyTorch's default)")
    limit = float(os.environ.get("STAGE_LIMIT", "0") or 0)  # scripts/gpu-device.sh's limit of this stage
    ap.add_argument("--deadline", type=float, default=max(limit - 5, 0),
                    help="seconds after which no further measurement starts (0: none; default: $STAGE_LIMIT - 5); "
                         "the rest is reported as not run")
    o = ap.parse_args()
    if o.warmup < 1 or o.min_steps < 1 or o.min_time < 0:
        ap.error("--warmup and --min-steps must be >= 1, --min-time >= 0")
    text = sys.stdin.read() if o.workloads == "-" else open(o.workloads).read()
    work = parse_workloads(text)
    if not work:
        ap.error("no workloads given")
    dev = torch.device(o.device)
    if dev.type == "cuda" and not torch.cuda.is_available():
        unavailable(f"PyTorch {torch.__version__} in {sys.executable} sees no CUDA device "
                    f"(built with CUDA {torch.version.cuda}); no PyTorch timings")
    if o.threads > 0:
        torch.set_num_threads(o.threads)
    torch.set_float32_matmul_precision("highest")  # no TF32 (PyTorch's default, made explicit)
    desc = str(dev) + (" (" + torch.cuda.get_device_name(dev) + ")" if dev.type == "cuda" else "")
    common = {"device": desc, "torch": torch.__version__, "matmul_precision": torch.get_float32_matmul_precision()}
    runs = [("eager", impl) for impl in o.impls.split(",") if impl]
    if o.compile:
        if hasattr(torch, "compile"):
            runs.append(("compile", "idiomatic"))
        else:
            print(json.dumps({"kind": "torch_note", "note": f"torch {torch.__version__} has no torch.compile"}), flush=True)
            print(f"cuda_suite: torch {torch.__version__} has no torch.compile: skipped", file=sys.stderr, flush=True)
    failed = 0
    compile_broken = None
    for mode, impl in runs:
        for name, argv in work:
            r = {"kind": "torch_time", "workload": name, "mode": mode, "impl": impl, **common}
            if o.deadline > 0 and time.perf_counter() - STARTED > o.deadline:
                print(json.dumps({"kind": "torch_note", "note": f"{mode} {impl} {name}: not run, past --deadline {o.deadline:g} s"}), flush=True)
                continue
            if mode == "compile" and compile_broken:
                print(json.dumps({"kind": "torch_note", "note": f"compile {name}: not run, torch.compile failed on the first workload ({compile_broken})"}), flush=True)
                continue
            try:
                r.update(measure(name, argv, dev, mode, impl, o))
                line = f"torch {mode:7s} {impl:9s} {name:20s} median {r['median_ms']:9.3f} ms  peak {r['peak_device_bytes'] / 2**20:8.1f} MiB"
            except Exception as e:  # noqa: BLE001 - report and go on with the next workload
                failed += 1
                r["error"] = f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"[:500]
                line = f"torch {mode:7s} {impl:9s} {name:20s} FAILED: {r['error']}"
                if mode == "compile" and compile_broken is None:
                    compile_broken = r["error"][:200]
            print(json.dumps(r), flush=True)
            print(line, file=sys.stderr, flush=True)
            if mode == "compile" and compile_broken is None:
                compile_broken = False  # the first compile worked: failures after it are the workload's
            gc.collect()
            if dev.type == "cuda":
                torch.cuda.empty_cache()
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
