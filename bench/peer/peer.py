#!/usr/bin/env python3
"""PyTorch peer of gdattn's models, for bench/peer (see main.go).

It builds the same models as gdattn's gd.Model and tf.Model, on the same
tokens, with the same parameter names and shapes (matrices act on the right,
z @ W, as in gdattn), and times the same training step (forward, mean
cross-entropy, backward, Adam) or forward pass. Each model comes in two
implementations (--impl), which compute the same loss and gradients:

mirror: the same operations as gdattn's graph. GD (gd.Model, Interleaved
form, exact erase), tokens (x, w_{e,y}, E, f), D = d + 3d', T = N+1
positions with the query last:

    z0 = (x, onehot(y) W_e^T [0 at the query], w_bar, 0)     w_bar = W_e 1/C
    per block:
        q  = z W_x                      W_x selects x                (B, T, d)
        A  = softmax_i(g q_j . q_i)     over the context keys i < N only
        v  = z (alpha/N) W_v            W_v = [label slot] - [E slot]
        z += (A v[:, :N]) P_f           P_f writes into the f slot
           - (z W_E) P_E                exact erase: the delta kernel is the identity
        f  = z W_f                      W_f reads the f slot
        z += softmax(f W_e) W_e^T P_E   cross-attention against W_e
    logits = f_query W_e ; loss = mean cross-entropy against the query label
    parameters: we (d', C), log_alpha, kernel/log_gamma (alpha, g = exp(.))

(gdattn applies the delta kernel as a product with a constant (B, T, T)
identity; the mirror skips that product, the one liberty it takes.)

idiomatic: what a PyTorch user would write for the same model: the token
slots held as separate tensors and read by slicing instead of selection
matrices, w_{e,y} gathered by label instead of a one-hot product, and for GD
the erase and cross-attention as E <- softmax(f W_e) W_e^T directly:

    per block:  A = softmax_i(g x_j . x_i) (i < N);  f += (alpha/N) A (w_{e,y} - E);
                E = softmax(f W_e) W_e^T

TF (tf.Model): Layers layers of one unconstrained softmax head
    z += softmax_i(g (z W_Q)_j . (z W_K)_i) (z W_V)_i W_O    keys i < N
and with Cross, after each head, cross-attention
    z += softmax((z W_q) W_k^T W_e) (W_v^T W_e)^T W_o
tokens (x, w_{e,y} - w_bar [0 at the query row], 0) without Cross (D = d+2d'),
the GD tokens with Cross; logits = (z_query R) W_e. Its two implementations
differ only in how w_{e,y} is formed.

fast: the fastest formulation of the same functions found (reported beside
the idiomatic one, checked equal as the others): the products regrouped
where that saves work. GD: the kernel weights depend only on x
and g, so they are computed once for all blocks, with g applied to x
(B, T, d) instead of to the scores (B, T, N) and the step alpha/N to the
values; the keys' transpose made contiguous once; only the query row is
updated in the last block (the context rows' f feeds the next block's E,
so earlier blocks update them). TF: the head as gdattn's
fused op computes it, scores z (g W_Q W_K^T) z_c^T and values z_c (W_V W_O)
(two D x D projections instead of four), at the query row of the last layer
(a z_c) (W_V W_O) (as gdattn with tf.Config.RegroupQuery, bench/peer's
-regroup-query), the context keys z_c = z[:, :N] contiguous, tokens built
by broadcasting. Language models: the scale folded
into the query weights (GPT) and the causal mask as a precomputed additive
-inf bias instead of masked_fill (GPT and GD LM), otherwise idiomatic.
The last GD block and the last layer of the TF (its head and, with
cross-attention, its cross-attention) are computed at the query row only,
which alone reaches the loss, as gdattn's gd.Model and tf.Model do (scores
(B, 1, N) instead of (B, T, N)).

Language models (--model gdlm [--ff] | gpt; classes GDLM and GPT below):
gdattn's gd.LM (Appendix H), GD + FF and tf.GPT, same parameter names,
shapes and token layout, float32 or float64, trained with the optimiser of
examples/language (AdamW, lr 1e-3, weight decay 0.01 on matrices, gradients
clipped to global norm 1; the in-context models use plain Adam, lr 1e-3, as
gdattn's bench). Mirror and idiomatic are again two implementations of
the same functions (see the classes).

Subcommands (print JSON on stdout):
    peer.py version
    peer.py blas  [--threads 1] [--size 1024] [--min-time 1]
                  (the BLAS library torch runs on, from the shared objects
                   mapped into this process, and its sgemm GFLOP/s: an
                   n x n x n torch.mm, float32, per second of wall time and
                   per second of process CPU time)
    peer.py time  --model gd|tf --depth K [--cross] --batch B --n N --d d
                  --dprime d' --c C [--dtype float32|float64] [--mode train|infer]
                  [--impl mirror|idiomatic] [--threads 1] [--warmup 3]
                  [--min-steps 10] [--min-time 2]
    peer.py time  --model gdlm|gpt [--ff] [--depth L] --batch B --vocab V
                  --context T --dprime d' --heads M [--dtype ...] [--mode ...]
                  [--impl mirror|idiomatic] [--threads 1] [--warmup 3]
                  [--min-steps 10] [--min-time 2]
    peer.py check DIR...  (DIRs written by `go run ./bench/peer`; one JSON
                           line per DIR and implementation)
"""

import argparse
import json
import math
import os
import statistics
import sys
import time

import numpy as np
import torch
import torch.nn.functional as F

IMPLS = ["mirror", "idiomatic", "fast"]


def sel(rows, cols, pairs, dtype, sign=1.0):
    """A (rows, cols) matrix with sign at each (r, c) of pairs."""
    m = torch.zeros(rows, cols, dtype=dtype)
    for r, c in pairs:
        m[r, c] = sign
    return m


class GD:
    """gdattn's gd.Model (Interleaved, exact erase, softmax kernel)."""

    def __init__(self, d, dp, C, N, blocks, dtype, gen, impl):
        self.d, self.dp, self.C, self.N, self.blocks, self.impl = d, dp, C, N, blocks, impl
        D = d + 3 * dp
        self.D = D
        offL, offE, offF = d, d + dp, d + 2 * dp
        self.offF = offF
        self.params = {
            "we": torch.randn(dp, C, dtype=dtype, generator=gen),
            "log_alpha": torch.tensor(math.log(N), dtype=dtype),
            "kernel/log_gamma": torch.tensor(0.0, dtype=dtype),
        }
        self.wx = sel(D, d, [(r, r) for r in range(d)], dtype)
        self.wv = sel(D, dp, [(offL + r, r) for r in range(dp)], dtype) - sel(D, dp, [(offE + r, r) for r in range(dp)], dtype)
        self.pf = sel(dp, D, [(r, offF + r) for r in range(dp)], dtype)
        self.erase_wv = sel(D, dp, [(offE + r, r) for r in range(dp)], dtype)
        self.erase_p = sel(dp, D, [(r, offE + r) for r in range(dp)], dtype, -1.0)
        self.cross_wq = sel(D, dp, [(offF + r, r) for r in range(dp)], dtype)
        self.cross_p = sel(dp, D, [(r, offE + r) for r in range(dp)], dtype)

    def tokens(self, x, labels):
        """x (B, T, d); labels (B*T, C) one-hot, query rows zero."""
        B, T, d = x.shape
        we = self.params["we"]
        wy = labels @ we.t()  # (B*T, d')
        wbar = we @ torch.full((self.C, 1), 1.0 / self.C, dtype=we.dtype)  # (d', 1)
        rows = torch.ones(B * T, 1, dtype=we.dtype) @ wbar.t()  # (B*T, d')
        f0 = torch.zeros(B * T, self.dp, dtype=we.dtype)
        z = torch.cat([x.reshape(B * T, d), wy, rows, f0], 1)
        return z.view(B, T, self.D)

    def logits(self, inp):
        if self.impl == "fast":
            return self.fast(inp)
        return self.idiomatic(inp) if self.impl == "idiomatic" else self.mirror(inp)

    def fast(self, inp):
        """idiomatic with the products regrouped: the weights (the same in
        every block) once, g on x, alpha/N on the values."""
        p, N = self.params, self.N
        we = p["we"]
        step = torch.exp(p["log_alpha"]) / N
        g = torch.exp(p["kernel/log_gamma"])
        x = inp.x
        B, T, _ = x.shape
        keys_t = x[:, :N].transpose(1, 2).contiguous()  # (B, d, N)
        # the context rows' weights feed the blocks before the last; the
        # last block's update is read at the query row alone
        a = torch.softmax((g * x[:, :N]) @ keys_t, -1) if self.blocks > 1 else None  # (B, N, N)
        aq = torch.softmax((g * x[:, N:]) @ keys_t, -1)  # (B, 1, N)
        wy = we.t()[inp.y[:, :N]]  # (B, N, d'), the context labels only
        e = we.mean(1)  # E(w_e | f = 0), the same row everywhere
        f = None  # f at the context rows
        fq = None  # f at the query
        for blk in range(self.blocks):
            v = step * (wy - e)
            fq = aq @ v if fq is None else fq + aq @ v
            if blk + 1 < self.blocks:  # the next block's E at the context rows
                f = a @ v if f is None else f + a @ v
                e = torch.softmax(f @ we, -1) @ we.t()
        return fq[:, 0] @ we

    def idiomatic(self, inp):
        """The same model written as a PyTorch user would: the token slots
        (x, w_{e,y}, E, f) held as separate tensors and read by slicing,
        w_{e,y} gathered by label, the erase as E <- E(w_e|f) directly."""
        p, N = self.params, self.N
        we = p["we"]
        step = torch.exp(p["log_alpha"]) / N
        g = torch.exp(p["kernel/log_gamma"])
        x = inp.x
        B, T, _ = x.shape
        wy = we.t()[inp.y] * inp.ctx  # (B, T, d'), 0 at the query
        e = we.mean(1).expand(B, T, self.dp)  # E(w_e | f = 0)
        f = torch.zeros(B, T, self.dp, dtype=we.dtype)
        for _ in range(self.blocks):
            a = torch.softmax(g * (x @ x[:, :N].transpose(1, 2)), -1)  # (B, T, N)
            f = f + step * (a @ (wy - e)[:, :N])
            e = torch.softmax(f @ we, -1) @ we.t()
        return f[:, N] @ we

    def mirror(self, inp):
        p, N = self.params, self.N
        we = p["we"]
        step = torch.exp(p["log_alpha"]) / N
        g = torch.exp(p["kernel/log_gamma"])
        z = self.tokens(inp.x, inp.labels)
        for _ in range(self.blocks):
            q = z @ self.wx  # (B, T, d)
            a = torch.softmax(g * (q @ q[:, :N].transpose(1, 2)), -1)  # (B, T, N)
            v = z @ (step * self.wv)  # (B, T, d')
            upd = (a @ v[:, :N]) @ self.pf
            er = (z @ self.erase_wv) @ self.erase_p
            z = z + (upd + er)
            f = z @ self.cross_wq  # (B, T, d')
            e = torch.softmax(f @ we, -1) @ we.t()
            z = z + e @ self.cross_p
        fq = z[:, N, self.offF:self.offF + self.dp]  # (B, d')
        return fq @ we


class TF:
    """gdattn's tf.Model (one softmax head per layer, optional cross-attention)."""

    def __init__(self, d, dp, C, N, layers, cross, dtype, gen, impl):
        self.d, self.dp, self.C, self.N, self.layers, self.cross, self.impl = d, dp, C, N, layers, cross, impl
        D = d + (3 if cross else 2) * dp
        self.D = D

        def glorot(r, c):
            lim = math.sqrt(6.0 / (r + c))
            return (torch.rand(r, c, dtype=dtype, generator=gen) * 2 - 1) * lim

        p = {"we": torch.randn(dp, C, dtype=dtype, generator=gen)}
        for l in range(layers):
            h = f"layer{l}/head0/"
            p[h + "log_gamma"] = torch.tensor(0.0, dtype=dtype)
            for n in ("wq", "wk", "wv", "wo"):
                p[h + n] = glorot(D, D)
            if cross:
                c = f"layer{l}/cross/"
                p[c + "wq"], p[c + "wk"], p[c + "wv"], p[c + "wo"] = glorot(D, dp), glorot(dp, dp), glorot(dp, dp), glorot(dp, D)
        p["readout/r"] = glorot(D, dp)
        self.params = p

    def tokens(self, inp):
        x = inp.x
        B, T, d = x.shape
        we = self.params["we"]
        if self.impl == "idiomatic":
            wy = (we.t()[inp.y] * inp.ctx).reshape(B * T, self.dp)
        else:
            wy = inp.labels @ we.t()
        wbar = we @ torch.full((self.C, 1), 1.0 / self.C, dtype=we.dtype)
        rowmask = torch.ones(B * T, 1, dtype=we.dtype)
        if not self.cross:
            rowmask.view(B, T)[:, T - 1] = 0  # the query token is (x, 0, 0)
        rows = rowmask @ wbar.t()
        f0 = torch.zeros(B * T, self.dp, dtype=we.dtype)
        if self.cross:
            z = torch.cat([x.reshape(B * T, d), wy, rows, f0], 1)
        else:
            z = torch.cat([x.reshape(B * T, d), wy - rows, f0], 1)
        return z.view(B, T, self.D)

    def fast_tokens(self, inp):
        """tokens() by broadcasting: (x, w_{e,y} - w_bar, 0) (0 in the label
        slot at the query) or, with Cross, (x, w_{e,y}, w_bar, 0)."""
        x = inp.x
        B, T, d = x.shape
        we = self.params["we"]
        wy = we.t()[inp.y] * inp.ctx  # (B, T, d'), 0 at the query
        wbar = we.mean(1)
        zeros = x.new_zeros(B, T, self.dp)
        if self.cross:
            return torch.cat([x, wy, wbar.expand(B, T, self.dp), zeros], 2)
        return torch.cat([x, wy - wbar * inp.ctx, zeros], 2)

    def logits(self, inp):
        p, N = self.params, self.N
        we = p["we"]
        fast = self.impl == "fast"
        z = self.fast_tokens(inp) if fast else self.tokens(inp)
        for l in range(self.layers):
            if fast:  # scores z (g W_Q W_K^T) z_c^T, values z_c (W_V W_O)
                h = f"layer{l}/head0/"
                a_qk = torch.exp(p[h + "log_gamma"]) * (p[h + "wq"] @ p[h + "wk"].t())
                zc = z[:, :N].contiguous()
                if l + 1 == self.layers:
                    # the last layer at the query only: the loss reads no other row
                    zq = z[:, N:]  # (B, 1, D)
                    a = torch.softmax((zq @ a_qk) @ zc.transpose(1, 2), -1)  # (B, 1, N)
                    # values regrouped: (a z_c) (W_V W_O), O(B N D) instead of O(B N D^2)
                    z = zq + (a @ zc) @ (p[h + "wv"] @ p[h + "wo"])
                    if self.cross:  # the cross-attention reads each row alone
                        c = f"layer{l}/cross/"
                        keys = p[c + "wq"] @ (p[c + "wk"].t() @ we)  # (D, C)
                        vals = (p[c + "wv"].t() @ we).t() @ p[c + "wo"]  # (C, D)
                        z = z + torch.softmax(z @ keys, -1) @ vals
                    return (z[:, 0] @ p["readout/r"]) @ we
                a = torch.softmax((z @ a_qk) @ zc.transpose(1, 2), -1)
                z = z + a @ (zc @ (p[h + "wv"] @ p[h + "wo"]))
            if self.cross and fast:
                c = f"layer{l}/cross/"
                keys = p[c + "wq"] @ (p[c + "wk"].t() @ we)  # (D, C)
                vals = (p[c + "wv"].t() @ we).t() @ p[c + "wo"]  # (C, D)
                z = z + torch.softmax(z @ keys, -1) @ vals
            if fast:
                continue
            h = f"layer{l}/head0/"
            g = torch.exp(p[h + "log_gamma"])
            q, k, v = z @ p[h + "wq"], z @ p[h + "wk"], z @ p[h + "wv"]
            a = torch.softmax(g * (q @ k[:, :N].transpose(1, 2)), -1)
            z = z + (a @ v[:, :N]) @ p[h + "wo"]
            if self.cross:
                c = f"layer{l}/cross/"
                f = z @ p[c + "wq"]
                keys = p[c + "wk"].t() @ we
                vals = p[c + "wv"].t() @ we
                e = torch.softmax(f @ keys, -1) @ vals.t()
                z = z + e @ p[c + "wo"]
        return (z[:, N] @ p["readout/r"]) @ we


def normal(shape, std, dtype, gen):
    return torch.randn(*shape, dtype=dtype, generator=gen) * std


def layer_norm(x, p, name):
    """layers.LayerNorm: biased variance, eps 1e-5, "scale" and "bias"."""
    return F.layer_norm(x, (x.shape[-1],), p[name + "/scale"], p[name + "/bias"], 1e-5)


def mlp(x, p, name):
    """layers.FeedForward with GELU (the tanh approximation, as gdattn)."""
    h = F.gelu(x @ p[name + "/w1"] + p[name + "/b1"], approximate="tanh")
    return h @ p[name + "/w2"] + p[name + "/b2"]


def ln_params(p, name, d, dtype):
    p[name + "/scale"] = torch.ones(d, dtype=dtype)
    p[name + "/bias"] = torch.zeros(d, dtype=dtype)


def mlp_params(p, name, d, hidden, std1, std2, dtype, gen):
    p[name + "/w1"] = normal((d, hidden), std1, dtype, gen)
    p[name + "/b1"] = torch.zeros(hidden, dtype=dtype)
    p[name + "/w2"] = normal((hidden, d), std2, dtype, gen)
    p[name + "/b2"] = torch.zeros(d, dtype=dtype)


class GDLM:
    """gdattn's gd.LM (Appendix H; softmax kernel with g = 1, one GD step,
    full P_m) and, with ff, GD + FF. Tokens t_0..t_{T-1} of each sequence,
    positions 0..T, queries 1..T:

        v_i   = w_{e,t_i} - w_bar                  w_bar = mean of the rows of wte
        a^m   = softmax_{i<j}((lambda_m * p_j) . (lambda_m * p_i))   (T+1, T), the same for every sequence
        f_j   = sum_m (sum_{i<j} a^m_{ji} v_i) P_m
        h     = f (+ FF(LN(f)) with ff)
        logits_j = LN_f(h_j) wte^T                 the token after t_{j-1}
    parameters: wte/w (V, d'), wpe (T+1, d'), head<m>/lambda (d'), head<m>/p
    (d', d'), ln_f/{scale,bias}, with ff ff/ln/{scale,bias} and
    ff/mlp/{w1,b1,w2,b2} (hidden 4d').

    mirror: gdattn's graph as first written: w_bar as a (1, V) mean row
    times wte (gdattn now fuses the mean into its lookup op,
    layers.SparseEmbedding.LookupCentered), the masked kernel of every query position 0..T (mask as a -1e30 bias and a
    0/1 keep factor, as layers' kernel op), repeated over the batch by a
    product with a (B, 1) column of ones, one batched product and one P_m
    product per head, summed. idiomatic: the M kernels at once (masked_fill
    with -inf on the queries 1..T only), the heads' outputs side by side and
    merged by one product with the stacked P_m."""

    def __init__(self, vocab, d, T, heads, ff, dtype, gen, impl):
        self.V, self.d, self.T, self.M, self.ff, self.impl = vocab, d, T, heads, ff, impl
        p = {"wte/w": normal((vocab, d), 0.02, dtype, gen), "wpe": normal((T + 1, d), 0.02, dtype, gen)}
        for m in range(heads):
            p[f"head{m}/lambda"] = 0.25 * (1 + 0.1 * torch.randn(d, dtype=dtype, generator=gen))
            p[f"head{m}/p"] = torch.eye(d, dtype=dtype) / heads
        if ff:
            ln_params(p, "ff/ln", d, dtype)
            mlp_params(p, "ff/mlp", d, 4 * d, 0.02, 0.02, dtype, gen)
        ln_params(p, "ln_f", d, dtype)
        self.params = p
        keep = torch.tril(torch.ones(T + 1, T, dtype=dtype), diagonal=-1)  # key i < query j
        self.keep, self.bias = keep, (1 - keep) * -1e30
        self.visible = torch.tril(torch.ones(T, T, dtype=torch.bool))  # queries 1..T: keys i <= j-1
        self.neg = torch.zeros(T, T, dtype=dtype).masked_fill(~self.visible, float("-inf"))  # fast: additive mask
        self.mean_row = torch.full((1, vocab), 1.0 / vocab, dtype=dtype)

    def logits(self, ids):
        p, B, T, d = self.params, ids.shape[0], self.T, self.d
        wte = p["wte/w"]
        emb = wte[ids]  # (B, T, d')
        if self.impl == "mirror":
            values = emb - (self.mean_row @ wte).view(1, 1, d)
            ones = torch.ones(B, 1, dtype=wte.dtype)
            f = None
            for m in range(self.M):
                q = p["wpe"] * p[f"head{m}/lambda"].view(1, d)  # (T+1, d')
                w = torch.softmax(q @ q[:T].t() + self.bias, -1) * self.keep  # (T+1, T)
                rep = (ones @ w.reshape(1, -1)).view(B, T + 1, T)
                o = torch.bmm(rep, values).reshape(B * (T + 1), d) @ p[f"head{m}/p"]
                f = o if f is None else f + o
            h = f.view(B, T + 1, d)[:, 1:].reshape(B * T, d)
        else:
            values = emb - wte.mean(0)
            lam = torch.stack([p[f"head{m}/lambda"] for m in range(self.M)])  # (M, d')
            q = p["wpe"].unsqueeze(0) * lam.unsqueeze(1)  # (M, T+1, d')
            s = q[:, 1:] @ q[:, :T].transpose(1, 2)
            s = s + self.neg if self.impl == "fast" else s.masked_fill(~self.visible, float("-inf"))
            a = torch.softmax(s, -1)  # (M, T, T)
            o = a.unsqueeze(0) @ values.unsqueeze(1)  # (B, M, T, d')
            pm = torch.cat([p[f"head{m}/p"] for m in range(self.M)], 0)  # (M d', d')
            h = o.transpose(1, 2).reshape(B * T, self.M * d) @ pm
        if self.ff:
            h = h + mlp(layer_norm(h, p, "ff/ln"), p, "ff/mlp")
        return layer_norm(h, p, "ln_f") @ wte.t()


class GPT:
    """gdattn's tf.GPT (nanoGPT): x = wte[t] + wpe; per layer (pre-norm)
    x += sum_h softmax_{i<=j}(q_h.k_h/sqrt(d'/H)) v_h wo_h over ln_1(x),
    x += MLP(ln_2(x)) (hidden 4d', GELU tanh); logits = ln_f(x) wte^T.
    Parameters as gdattn's: wte/w (V, d'), wpe (T, d'), h<l>/ln_1, h<l>/attn/
    head<h>/{wq,wk,wv} (d', d'/H) and wo (d'/H, d'), h<l>/ln_2, h<l>/mlp/
    {w1,b1,w2,b2}, ln_f.

    mirror: each head on its own as gdattn's layers.Attention (three
    products, the causal mask as a -1e30 bias and a 0/1 keep factor, its
    share wo_h of the output projection), the heads' outputs summed.
    idiomatic: nanoGPT's CausalSelfAttention: one (d', 3d') product for Q, K
    and V of every head (the per-head matrices concatenated), heads as a
    batch dimension, masked_fill with -inf, one (d', d') output product."""

    def __init__(self, vocab, d, T, heads, layers, dtype, gen, impl):
        self.V, self.d, self.T, self.H, self.L, self.impl = vocab, d, T, heads, layers, impl
        hd = d // heads
        resid = 0.02 / math.sqrt(2 * layers)
        p = {"wte/w": normal((vocab, d), 0.02, dtype, gen), "wpe": normal((T, d), 0.02, dtype, gen)}
        for l in range(layers):
            b = f"h{l}/"
            ln_params(p, b + "ln_1", d, dtype)
            for h in range(heads):
                a = f"{b}attn/head{h}/"
                for n in ("wq", "wk", "wv"):
                    p[a + n] = normal((d, hd), 0.02, dtype, gen)
                p[a + "wo"] = normal((hd, d), resid, dtype, gen)
            ln_params(p, b + "ln_2", d, dtype)
            mlp_params(p, b + "mlp", d, 4 * d, 0.02, resid, dtype, gen)
        ln_params(p, "ln_f", d, dtype)
        self.params = p
        keep = torch.tril(torch.ones(T, T, dtype=dtype))  # key i <= query j
        self.keep, self.bias = keep, (1 - keep) * -1e30
        self.visible = keep.bool()
        self.neg = torch.zeros(T, T, dtype=dtype).masked_fill(~self.visible, float("-inf"))  # fast: additive mask
        self.scale = 1.0 / math.sqrt(hd)

    def attn_mirror(self, a, l):
        p, out = self.params, None
        for h in range(self.H):
            n = f"h{l}/attn/head{h}/"
            q, k, v = a @ p[n + "wq"], a @ p[n + "wk"], a @ p[n + "wv"]
            w = torch.softmax(self.scale * (q @ k.transpose(1, 2)) + self.bias, -1) * self.keep
            o = (w @ v) @ p[n + "wo"]
            out = o if out is None else out + o
        return out

    def attn_idiomatic(self, a, l):
        p, H, d = self.params, self.H, self.d
        B, T, hd = a.shape[0], a.shape[1], d // H
        heads = [f"h{l}/attn/head{h}/" for h in range(H)]
        fast = self.impl == "fast"
        wq = [p[n + "wq"] * self.scale if fast else p[n + "wq"] for n in heads]  # fast: the scale in W_Q
        w_qkv = torch.cat(wq + [p[n + m] for m in ("wk", "wv") for n in heads], 1)  # (d', 3d')
        q, k, v = (a @ w_qkv).split(d, 2)
        q, k, v = (t.view(B, T, H, hd).transpose(1, 2) for t in (q, k, v))  # (B, H, T, hd)
        if fast:
            att = torch.softmax(q @ k.transpose(-2, -1) + self.neg, -1)
        else:
            att = (q @ k.transpose(-2, -1)) * self.scale
            att = torch.softmax(att.masked_fill(~self.visible, float("-inf")), -1)
        y = (att @ v).transpose(1, 2).reshape(B, T, d)
        return y @ torch.cat([p[n + "wo"] for n in heads], 0)

    def logits(self, ids):
        p = self.params
        x = p["wte/w"][ids] + p["wpe"]  # (B, T, d')
        for l in range(self.L):
            a = layer_norm(x, p, f"h{l}/ln_1")
            x = x + (self.attn_mirror(a, l) if self.impl == "mirror" else self.attn_idiomatic(a, l))
            x = x + mlp(layer_norm(x, p, f"h{l}/ln_2"), p, f"h{l}/mlp")
        return layer_norm(x.reshape(-1, self.d), p, "ln_f") @ p["wte/w"].t()


LM_MODELS = ("gdlm", "gpt")


def build_lm(a, dtype, gen, impl):
    if a.model == "gdlm":
        return GDLM(a.vocab, a.dprime, a.context, a.heads, a.ff, dtype, gen, impl)
    return GPT(a.vocab, a.dprime, a.context, a.heads, max(a.depth, 1), dtype, gen, impl)


def lm_optimizer(params):
    """examples/language's optimiser (bench.LMTrainConfig): AdamW, lr 1e-3,
    betas (0.9, 0.999), eps 1e-8, weight decay 0.01 on the parameters of
    rank >= 2 only; the step clips the gradients to global norm 1."""
    decay = [t for t in params if t.dim() >= 2]
    rest = [t for t in params if t.dim() < 2]
    return torch.optim.AdamW([{"params": decay, "weight_decay": 1e-2}, {"params": rest, "weight_decay": 0.0}],
                             lr=1e-3, betas=(0.9, 0.999), eps=1e-8)


def build(a, dtype, gen, impl):
    if a.model == "gd":
        return GD(a.d, a.dprime, a.c, a.n, a.depth, dtype, gen, impl)
    if a.model == "tf":
        return TF(a.d, a.dprime, a.c, a.n, a.depth, a.cross, dtype, gen, impl)
    raise SystemExit(f"peer.py: unknown model {a.model!r}")


def inputs(x, y, C, dtype):
    """x (B, T, d) float, y (B, T) int -> the model inputs: x, the labels y, a
    (B, T, 1) mask ctx that is 0 at the query, the one-hot context labels
    (B*T, C) with query rows zero (for the mirror), and the query labels (B,)."""
    B, T = y.shape
    labels = F.one_hot(y.reshape(-1), C).to(dtype)
    labels.view(B, T, C)[:, T - 1] = 0
    ctx = torch.ones(B, T, 1, dtype=dtype)
    ctx[:, T - 1] = 0
    return argparse.Namespace(x=x.to(dtype), y=y, ctx=ctx, labels=labels, target=y[:, T - 1].clone())


def vm_hwm():
    """Peak RSS of this process in bytes (VmHWM), 0 where /proc is missing."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def cmd_time(a):
    torch.set_num_threads(a.threads)
    try:
        torch.set_num_interop_threads(1)
    except RuntimeError:
        pass
    dtype = {"float32": torch.float32, "float64": torch.float64}[a.dtype]
    gen = torch.Generator().manual_seed(1)
    if a.model in LM_MODELS:
        m = build_lm(a, dtype, gen, a.impl)
        inp = torch.randint(0, a.vocab, (a.batch, a.context), generator=gen)
        target = torch.randint(0, a.vocab, (a.batch * a.context,), generator=gen)
    else:
        m = build(a, dtype, gen, a.impl)
        T = a.n + 1
        x = torch.rand(a.batch, T, a.d, dtype=dtype, generator=gen) * 2 - 1
        y = torch.randint(0, a.c, (a.batch, T), generator=gen)
        inp = inputs(x, y, a.c, dtype)
        target = inp.target
    dev = torch.device(a.device)
    if dev.type != "cpu":
        # Built on the CPU (the seeded generator is a CPU one), then moved;
        # tensors the forward pass creates follow the default device.
        m = to_device(m, dev)
        inp, target = to_device(inp, dev), to_device(target, dev)
        if hasattr(torch, "set_default_device"):
            torch.set_default_device(dev)
    params = list(m.params.values())
    for t in params:
        t.requires_grad_(True)
    lm = a.model in LM_MODELS
    opt = lm_optimizer(params) if lm else torch.optim.Adam(params, lr=1e-3)

    def train():
        opt.zero_grad(set_to_none=True)
        loss = F.cross_entropy(m.logits(inp), target, ignore_index=-1)
        loss.backward()
        if lm:
            torch.nn.utils.clip_grad_norm_(params, 1.0)
        opt.step()
        return loss.item()

    def infer():
        with torch.no_grad():
            out = m.logits(inp)
        if dev.type == "cuda":
            torch.cuda.synchronize()
        return out

    step = train if a.mode == "train" else infer
    for _ in range(a.warmup):
        step()
    ds, cs = [], []
    total = 0.0
    while len(ds) < a.min_steps or total < a.min_time:
        c0 = time.process_time()
        t0 = time.perf_counter()
        step()
        d = time.perf_counter() - t0
        cs.append(time.process_time() - c0)
        ds.append(d)
        total += d
    print(json.dumps({
        "device": str(dev) + ("" if dev.type != "cuda" else " (" + torch.cuda.get_device_name(dev) + ")"),
        "median_ms": 1e3 * statistics.median(ds), "mean_ms": 1e3 * total / len(ds), "min_ms": 1e3 * min(ds),
        "cpu_median_ms": 1e3 * statistics.median(cs),
        "steps": len(ds), "threads": torch.get_num_threads(), "torch": torch.__version__,
        "vm_hwm_bytes": vm_hwm(),
    }))


def to_device(obj, dev):
    """Moves obj to dev: a tensor, or (in place) every tensor held by an
    object's attributes, dicts, lists and namespaces, recursively."""
    if isinstance(obj, torch.Tensor):
        return obj.to(dev)
    if isinstance(obj, dict):
        for k, v in obj.items():
            obj[k] = to_device(v, dev)
        return obj
    if isinstance(obj, list):
        for i, v in enumerate(obj):
            obj[i] = to_device(v, dev)
        return obj
    if isinstance(obj, tuple):
        return tuple(to_device(v, dev) for v in obj)
    if hasattr(obj, "__dict__") and not isinstance(obj, type) and not callable(obj):
        for k, v in vars(obj).items():
            setattr(obj, k, to_device(v, dev))
    return obj


def blas_library():
    """The BLAS library this process runs on: the shared objects mapped in
    (torch links libblas.so.3, which Debian's alternatives resolve to the
    reference BLAS, OpenBLAS, BLIS or MKL), and OpenBLAS's own configuration
    string when it is OpenBLAS."""
    libs = set()
    try:
        with open("/proc/self/maps") as f:
            for line in f:
                path = line.split()[-1]
                base = os.path.basename(path)
                if any(k in base for k in ("blas", "mkl", "blis", "lapack")):
                    libs.add(os.path.realpath(path))
    except OSError:
        pass
    kind = "unknown"
    names = " ".join(sorted(libs))
    if "openblas" in names:
        kind = "OpenBLAS"
    elif "mkl" in names:
        kind = "MKL"
    elif "blis" in names:
        kind = "BLIS"
    elif "/blas/libblas" in names or "/libblas.so" in names:
        kind = "reference BLAS (netlib)"
    config = ""
    for path in sorted(libs):
        if "openblas" in os.path.basename(path) and "lapack" not in os.path.basename(path):
            try:
                import ctypes
                lib = ctypes.CDLL(path)
                lib.openblas_get_config.restype = ctypes.c_char_p
                config = lib.openblas_get_config().decode()
                lib.openblas_get_num_threads.restype = ctypes.c_int
                config += f" (threads now {lib.openblas_get_num_threads()})"
            except (OSError, AttributeError):
                pass
    return kind, sorted(libs), config


def cmd_blas(a):
    torch.set_num_threads(a.threads)
    n = a.size
    gen = torch.Generator().manual_seed(1)
    x = torch.rand(n, n, generator=gen)
    y = torch.rand(n, n, generator=gen)
    for _ in range(3):
        torch.mm(x, y)
    steps, wall, cpu = 0, 0.0, 0.0
    while steps < 3 or wall < a.min_time:
        c0, t0 = time.process_time(), time.perf_counter()
        torch.mm(x, y)
        wall += time.perf_counter() - t0
        cpu += time.process_time() - c0
        steps += 1
    flop = 2.0 * n * n * n * steps
    kind, libs, config = blas_library()
    print(json.dumps({
        "blas": kind, "libraries": libs, "config": config, "build_blas_info": build_blas_info(),
        "size": n, "threads": torch.get_num_threads(), "steps": steps,
        "gflops_wall": flop / wall / 1e9, "gflops_cpu": flop / max(cpu, 1e-9) / 1e9,
    }))


def build_blas_info():
    """BLAS_INFO of torch's build settings ("generic" for Debian's, which
    links whatever libblas.so.3 the system provides)."""
    return torch.__config__.show().split("BLAS_INFO=")[-1].split(",")[0]


def cmd_check(a):
    torch.set_num_threads(1)
    for d in a.dirs:
        for impl in IMPLS:
            check_dir(d, a.tol, impl)


def check_dir(dir, tol, impl):
    """Loads the inputs and parameters gdattn exported to dir, computes the
    loss and the gradients in float64 with implementation impl, and compares
    them with gdattn's."""
    meta = json.load(open(os.path.join(dir, "meta.json")))
    ns = argparse.Namespace(**meta["workload"])
    dtype = torch.float64
    if ns.model in LM_MODELS:
        m = build_lm(ns, dtype, torch.Generator().manual_seed(0), impl)
        inp = torch.from_numpy(np.load(os.path.join(dir, "ids.npy")).astype(np.int64))
        target = torch.from_numpy(np.load(os.path.join(dir, "targets.npy")).astype(np.int64))
    else:
        m = build(ns, dtype, torch.Generator().manual_seed(0), impl)
        x = torch.from_numpy(np.load(os.path.join(dir, "x.npy")))
        y = torch.from_numpy(np.load(os.path.join(dir, "y.npy")).astype(np.int64))
        inp = inputs(x, y, ns.c, dtype)
        target = inp.target
    if sorted(meta["params"]) != sorted(m.params):
        raise SystemExit(f"peer.py: parameter names differ: gdattn {sorted(meta['params'])}, peer {sorted(m.params)}")
    for name in meta["params"]:
        v = torch.from_numpy(np.load(os.path.join(dir, "p_" + name.replace("/", "__") + ".npy"))).to(dtype)
        if tuple(v.shape) != tuple(m.params[name].shape):
            raise SystemExit(f"peer.py: {name}: gdattn shape {tuple(v.shape)}, peer {tuple(m.params[name].shape)}")
        m.params[name] = v.clone().requires_grad_(True)
    loss = F.cross_entropy(m.logits(inp), target, ignore_index=-1)
    loss.backward()
    grad_diff, grad_scale = 0.0, 0.0
    for name in meta["params"]:
        g = torch.from_numpy(np.load(os.path.join(dir, "g_" + name.replace("/", "__") + ".npy")))
        grad_diff = max(grad_diff, (m.params[name].grad - g).abs().max().item())
        grad_scale = max(grad_scale, g.abs().max().item())
    diff = abs(loss.item() - meta["loss"])
    print(json.dumps({
        "impl": impl, "loss_gdattn": meta["loss"], "loss_torch": loss.item(), "loss_abs_diff": diff,
        "grad_max_abs_diff": grad_diff, "grad_max_abs": grad_scale,
        "ok": diff <= tol and grad_diff <= tol * max(1.0, grad_scale),
    }), flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    sub.add_parser("version")
    b = sub.add_parser("blas")
    b.add_argument("--threads", type=int, default=1)
    b.add_argument("--size", type=int, default=1024)
    b.add_argument("--min-time", type=float, default=1.0)
    t = sub.add_parser("time")
    t.add_argument("--model", required=True, choices=["gd", "tf"] + list(LM_MODELS))
    t.add_argument("--depth", type=int, default=1)
    t.add_argument("--cross", action="store_true")
    t.add_argument("--batch", type=int, required=True)
    t.add_argument("--n", type=int, default=0)
    t.add_argument("--d", type=int, default=0)
    t.add_argument("--dprime", type=int, required=True)
    t.add_argument("--c", type=int, default=0)
    t.add_argument("--vocab", type=int, default=0, help="language models: vocabulary")
    t.add_argument("--context", type=int, default=0, help="language models: context T")
    t.add_argument("--heads", type=int, default=0, help="language models: heads")
    t.add_argument("--ff", action="store_true", help="gdlm: GD + FF")
    t.add_argument("--dtype", default="float32", choices=["float32", "float64"])
    t.add_argument("--mode", default="train", choices=["train", "infer"])
    t.add_argument("--impl", default="mirror", choices=IMPLS)
    t.add_argument("--threads", type=int, default=1)
    t.add_argument("--device", default="cpu", help="torch device to time on, e.g. cuda (the GPU comparison of graph/cuda)")
    t.add_argument("--warmup", type=int, default=3)
    t.add_argument("--min-steps", type=int, default=10)
    t.add_argument("--min-time", type=float, default=2.0)
    c = sub.add_parser("check")
    c.add_argument("dirs", nargs="+", metavar="DIR")
    c.add_argument("--tol", type=float, default=1e-6)
    a = ap.parse_args()
    if a.cmd == "version":
        print(json.dumps({"torch": torch.__version__, "numpy": np.__version__, "python": sys.version.split()[0],
                          "blas": blas_library()[0], "build_blas_info": build_blas_info(),
                          "vm_hwm_bytes": vm_hwm()}))
    elif a.cmd == "blas":
        if a.threads < 1 or a.size < 1:
            raise SystemExit("peer.py: --threads and --size must be >= 1")
        cmd_blas(a)
    elif a.cmd == "time":
        sizes = ("vocab", "context", "heads") if a.model in LM_MODELS else ("n", "d", "c")
        for k in sizes:
            if getattr(a, k) <= 0:
                raise SystemExit(f"peer.py: --{k} must be > 0 for --model {a.model}")
        cmd_time(a)
    else:
        cmd_check(a)


if __name__ == "__main__":
    main()
