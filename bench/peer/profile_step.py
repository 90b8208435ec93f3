"""Profile one synthetic training step of the PyTorch peer (peer.py).

    OPENBLAS_CORETYPE=Zen OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 \
        /usr/bin/python3 bench/peer/profile_step.py tf 250 float32 [impl]

builds the model as `peer.py time` does (batch 512, d = 10, d' = 5,
C = 25, one block/layer, impl "fast" unless named), runs 3 warm-up steps,
then 5 steps under torch.profiler and prints the operators by self CPU
time. The profiler's per-call cost inflates the totals: read the shares.
"""
import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

import peer  # noqa: E402


def main():
    if len(sys.argv) not in (4, 5) or sys.argv[1] not in ("gd", "tf") or sys.argv[3] not in ("float32", "float64"):
        sys.exit("usage: profile_step.py gd|tf N float32|float64 [impl]")
    model, n, dt = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    impl = sys.argv[4] if len(sys.argv) == 5 else "fast"
    torch.set_num_threads(1)
    a = argparse.Namespace(model=model, depth=1, cross=False, batch=512, n=n, d=10, dprime=5, c=25,
                           impl=impl, dtype=dt)
    dtype = getattr(torch, dt)
    gen = torch.Generator().manual_seed(1)
    m = peer.build(a, dtype, gen, impl)
    T = n + 1
    x = torch.rand(a.batch, T, a.d, dtype=dtype, generator=gen) * 2 - 1
    y = torch.randint(0, a.c, (a.batch, T), generator=gen)
    inp = peer.inputs(x, y, a.c, dtype)
    params = list(m.params.values())
    for t in params:
        t.requires_grad_(True)
    opt = torch.optim.Adam(params, lr=1e-3)

    def train():
        opt.zero_grad(set_to_none=True)
        loss = F.cross_entropy(m.logits(inp), inp.target, ignore_index=-1)
        loss.backward()
        opt.step()
        return loss.item()

    for _ in range(3):
        train()
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as p:
        for _ in range(5):
            train()
    print(p.key_averages().table(sort_by="self_cpu_time_total", row_limit=14))


if __name__ == "__main__":
    main()
