#!/usr/bin/env python3
"""PyTorch peer of gdattn's cached generation, for bench/generate.

    generate.py DIR

DIR holds what bench/generate exported: meta.json (model, sizes, dtype,
strategy, new ids, beams, threads), the parameters p_<name>.npy (gdattn's
names, "/" written "__"), the prompts (prompts.npy, (B, P) ids), and
gdattn's logits along its first greedy ids of prompt 0 (check_logits.npy,
check_greedy.npy). The script builds an idiomatic decoder with a key/value
cache on those parameters, checks its logits and greedy ids against
gdattn's, then times the same generation (greedy or beam search, every
prompt at once) and prints one JSON line: tok_per_s (generated ids per
second of wall time), cpu_ms_per_tok (process CPU time per id),
max_rel_diff (max |torch - gdattn| / max |gdattn| over the checked logits)
and same_greedy.

The decoders (models as in peer.py's GDLM and GPT, matrices acting on the
right):

GPT: nanoGPT's model with a KV cache: per layer preallocated key and value
tensors (N, H, T, d'/H) and a length; a step projects the new position
with one (d', 3d') product, attends over the cached keys, and runs the
MLP; logits = ln_f(x) wte^T. Past the window (T ids) the cache is rebuilt
from the last T ids (positions shift), as gdattn does.

GD LM (one step, softmax kernel with g = 1, full P_m, optional FF): the
kernel weights a^m_{ji} = softmax_{i<j}((lambda_m p_j).(lambda_m p_i)) are
positional only and computed once (M, T+1, T); the cache holds the values
v_i = w_{e,t_i} - w_bar (N, T, d'); a step appends one value and computes
f = sum_m (a^m_{L,:L} v) P_m with one product by the stacked P_m. The values
do not depend on positions, so past the window the oldest is dropped.

Beam search keeps N = prompts x beams rows and reorders the caches with
index_select after each step (log-softmax scores summed, the top beams of
the beams x V candidates per prompt).
"""

import json
import math
import os
import sys
import time

import numpy as np
import torch
import torch.nn.functional as F


def load(dir):
    meta = json.load(open(os.path.join(dir, "meta.json")))
    dtype = torch.float32 if meta["dtype"] == "float32" else torch.float64
    p = {}
    for name in meta["params"]:
        p[name] = torch.from_numpy(np.load(os.path.join(dir, "p_" + name.replace("/", "__") + ".npy"))).to(dtype)
    return meta, p, dtype


def layer_norm(x, p, name):
    return F.layer_norm(x, (x.shape[-1],), p[name + "/scale"], p[name + "/bias"], 1e-5)


def mlp(x, p, name):
    return F.gelu(x @ p[name + "/w1"] + p[name + "/b1"], approximate="tanh") @ p[name + "/w2"] + p[name + "/b2"]


class GPTCache:
    def __init__(self, meta, p):
        self.p, self.V, self.d, self.T, self.H = p, meta["vocab"], meta["dprime"], meta["context"], meta["heads"]
        self.L = 1 + max(int(k[1:k.index("/")]) for k in p if k.startswith("h") and "/" in k)
        self.hd = self.d // self.H
        heads = lambda l: [f"h{l}/attn/head{h}/" for h in range(self.H)]
        self.wqkv = [torch.cat([p[n + m] for m in ("wq", "wk", "wv") for n in heads(l)], 1) for l in range(self.L)]
        self.wo = [torch.cat([p[n + "wo"] for n in heads(l)], 0) for l in range(self.L)]

    def start(self, ids):
        """A cache for the rows ids (N, n), cropped to the window; returns it
        and the logits."""
        N = ids.shape[0]
        dt = self.p["wpe"].dtype
        c = {"k": [torch.zeros(N, self.H, self.T, self.hd, dtype=dt) for _ in range(self.L)],
             "v": [torch.zeros(N, self.H, self.T, self.hd, dtype=dt) for _ in range(self.L)],
             "len": 0, "ids": ids}
        return c, self.forward(c, ids[:, -self.T:])

    def forward(self, c, ids):
        """Appends ids (N, n) to the cache, returns the logits after the last."""
        p, N, n, d, H, hd = self.p, ids.shape[0], ids.shape[1], self.d, self.H, self.hd
        lo = c["len"]
        x = p["wte/w"][ids] + p["wpe"][lo:lo + n]  # (N, n, d')
        for l in range(self.L):
            a = layer_norm(x, p, f"h{l}/ln_1")
            q, k, v = (a @ self.wqkv[l]).split(d, 2)
            q, k, v = (t.view(N, n, H, hd).transpose(1, 2) for t in (q, k, v))  # (N, H, n, hd)
            c["k"][l][:, :, lo:lo + n] = k
            c["v"][l][:, :, lo:lo + n] = v
            keys, vals = c["k"][l][:, :, :lo + n], c["v"][l][:, :, :lo + n]
            att = (q @ keys.transpose(-2, -1)) * (1.0 / math.sqrt(hd))  # (N, H, n, lo+n)
            if n > 1:
                mask = torch.ones(n, lo + n, dtype=torch.bool).tril(diagonal=lo)
                att = att.masked_fill(~mask, float("-inf"))
            y = (torch.softmax(att, -1) @ vals).transpose(1, 2).reshape(N, n, d)
            x = x + y @ self.wo[l]
            x = x + mlp(layer_norm(x, p, f"h{l}/ln_2"), p, f"h{l}/mlp")
        c["len"] = lo + n
        return layer_norm(x[:, -1], p, "ln_f") @ p["wte/w"].t()

    def step(self, c, tok):
        """Appends one id per row (N,); past the window rebuilds the cache."""
        c["ids"] = torch.cat([c["ids"], tok.view(-1, 1)], 1)
        if c["len"] < self.T:
            return self.forward(c, tok.view(-1, 1))
        c["len"] = 0
        return self.forward(c, c["ids"][:, -self.T:])

    def reorder(self, c, idx):
        c["k"] = [t.index_select(0, idx) for t in c["k"]]
        c["v"] = [t.index_select(0, idx) for t in c["v"]]
        c["ids"] = c["ids"].index_select(0, idx)


class GDCache:
    def __init__(self, meta, p):
        self.p, self.V, self.d, self.T, self.M = p, meta["vocab"], meta["dprime"], meta["context"], meta["heads"]
        self.ff = meta["model"] == "gdff"
        T, d = self.T, self.d
        lam = torch.stack([p[f"head{m}/lambda"] for m in range(self.M)])  # (M, d')
        q = p["wpe"].unsqueeze(0) * lam.unsqueeze(1)  # (M, T+1, d')
        s = q @ q[:, :T].transpose(1, 2)  # (M, T+1, T)
        keep = torch.ones(T + 1, T, dtype=torch.bool).tril(diagonal=-1)  # key i < query j
        a = torch.softmax(s.masked_fill(~keep, float("-inf")), -1)
        self.a = torch.nan_to_num(a, nan=0.0)  # query 0 has no key
        self.pm = torch.cat([p[f"head{m}/p"] for m in range(self.M)], 0)  # (M d', d')
        self.mean = p["wte/w"].mean(0)

    def start(self, ids):
        N = ids.shape[0]
        c = {"v": torch.zeros(N, self.T, self.d, dtype=self.pm.dtype), "len": 0}
        return c, self.forward(c, ids[:, -self.T:])

    def forward(self, c, ids):
        n, lo = ids.shape[1], c["len"]
        c["v"][:, lo:lo + n] = self.p["wte/w"][ids] - self.mean
        c["len"] = L = lo + n
        u = self.a[:, L, :L].unsqueeze(0) @ c["v"][:, :L]  # (1, M, L) @ (N, L, d') -> (N, M, d')
        return self.head(u.reshape(ids.shape[0], self.M * self.d))

    def head(self, u):
        h = u @ self.pm  # (N, d'): sum_m u_m P_m
        if self.ff:
            h = h + mlp(layer_norm(h, self.p, "ff/ln"), self.p, "ff/mlp")
        return layer_norm(h, self.p, "ln_f") @ self.p["wte/w"].t()

    def step(self, c, tok):
        if c["len"] == self.T:  # the window slides: values do not depend on positions
            c["v"] = torch.roll(c["v"], -1, 1)
            c["len"] -= 1
        return self.forward(c, tok.view(-1, 1))

    def reorder(self, c, idx):
        c["v"] = c["v"].index_select(0, idx)


def greedy(dec, prompts, new):
    c, logits = dec.start(prompts)
    out = []
    for i in range(new):
        tok = logits.argmax(-1)
        out.append(tok)
        if i + 1 < new:
            logits = dec.step(c, tok)
    return torch.stack(out, 1)


def beam(dec, prompts, new, beams):
    B = prompts.shape[0]
    c, logits = dec.start(prompts)
    lp = torch.log_softmax(logits.double(), -1)  # (B, V)
    score, tok = lp.topk(beams, -1)  # (B, beams)
    idx = torch.arange(B).repeat_interleave(beams)
    dec.reorder(c, idx)
    seqs = tok.reshape(-1, 1)
    score = score.reshape(-1)
    for _ in range(new - 1):
        logits = dec.step(c, seqs[:, -1])
        cand = (score.view(-1, 1) + torch.log_softmax(logits.double(), -1)).view(B, -1)  # (B, beams V)
        score, flat = cand.topk(beams, -1)
        parent = (flat // dec.V) + torch.arange(B).view(-1, 1) * beams
        parent, tok = parent.reshape(-1), (flat % dec.V).reshape(-1)
        dec.reorder(c, parent)
        seqs = torch.cat([seqs.index_select(0, parent), tok.view(-1, 1)], 1)
        score = score.reshape(-1)
    best = score.view(B, beams).argmax(-1) + torch.arange(B) * beams
    return seqs.index_select(0, best)


def main():
    dir = sys.argv[1]
    meta, p, dtype = load(dir)
    torch.set_num_threads(meta["threads"])
    dec = GPTCache(meta, p) if meta["model"] == "gpt" else GDCache(meta, p)
    prompts = torch.from_numpy(np.load(os.path.join(dir, "prompts.npy")))
    want = np.load(os.path.join(dir, "check_logits.npy"))
    want_greedy = np.load(os.path.join(dir, "check_greedy.npy"))
    with torch.no_grad():
        c, logits = dec.start(prompts[:1])
        got, toks = [logits[0].double().numpy()], []
        for i in range(len(want_greedy)):
            tok = logits.argmax(-1)
            toks.append(int(tok[0]))
            logits = dec.step(c, torch.tensor([int(want_greedy[i])]))
            got.append(logits[0].double().numpy())
        got = np.stack(got)
        rel = float(np.abs(got - want).max() / np.abs(want).max())
        same = toks == [int(t) for t in want_greedy]
        c0, t0 = time.process_time(), time.perf_counter()
        if meta["strategy"] == "beam":
            out = beam(dec, prompts, meta["new"], meta["beams"])
        else:
            out = greedy(dec, prompts, meta["new"])
        wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    n = out.numel()
    print(json.dumps({"tok_per_s": n / wall, "cpu_ms_per_tok": 1000 * cpu / n, "max_rel_diff": rel, "same_greedy": same}), flush=True)


if __name__ == "__main__":
    main()
