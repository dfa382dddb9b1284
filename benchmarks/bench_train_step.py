"""One training step (forward, backward, AdamW) of the NumPy encoder against PyTorch eager on the CPU.

Usage::

    .venv/bin/pip install torch==2.13.0        # benchmark-only; never a dependency of mlm_book
    .venv/bin/python benchmarks/bench_train_step.py [--threads 1] [--reps 40]

Both implementations run the same model (the book's encoder: pre-LN blocks without a causal
mask, fused QKV with biases, GELU (tanh form) MLP of width 4d, final LayerNorm, tied head
``LN(x) E^T / sqrt(d) + b``, [PAD] keys masked) on the same batch with the same parameters,
in float32, with the same number of threads (set before either library is imported), and
the script checks that their losses agree before timing. PyTorch is written the way one
would write it: ``nn.Linear``/``nn.LayerNorm`` modules, ``F.scaled_dot_product_attention``
with a boolean key mask when the batch holds [PAD], the head applied to the selected rows
only, and ``torch.optim.AdamW(fused=True)``.

Two sizes. "HMM": the HMM encoder's shape (V 25, d 32, 24 slots) on a batch of 64 uniform
random sequences, about 15 % of slots selected. "filings": the book's filing encoder
exactly (:mod:`mlm_book.artefacts.filing_encoder`: ``SETUP.encoder(V)`` over the book
corpus's vocabulary, [MASK] and [PAD] input-only, unit-scale token table) on one real
training batch: ``training_config().batch_size`` (120) centred windows drawn by the
training source, [PAD] beyond a filing's edge, corrupted by the training loop's own
``corrupt_batch`` through the book's channel. Both optimisers use the book's decoupled weight decay on
the same parameters (embedding tables and weight matrices; not biases or LayerNorm
parameters). The NumPy step is :mod:`mlm_book.nn.encoder`'s training step plus
:class:`mlm_book.nn.adam.Adam`; it also restricts the last block's
queries, output projection and MLP to the selected rows (same loss and gradients, tested),
which the PyTorch version does not do. The GFLOP/s columns count the full model's matrix
products for both, i.e. useful work per second.

Repetitions are interleaved (NumPy, PyTorch, PyTorch, NumPy, ...) so that a loaded machine
slows both alike; the script prints the median over repetitions of the paired ratio
NumPy/PyTorch, the median step times, and the achieved GFLOP/s (matrix products only,
counted for the full model) against a large float32 GEMM timed in the same run.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time


def parse():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=1, help="threads for both libraries (default 1)")
    parser.add_argument("--reps", type=int, default=40, help="interleaved repetitions per size")
    parser.add_argument("--inner", type=int, default=5, help="training steps per timed repetition")
    return parser.parse_args()


ARGS = parse()
for variable in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[variable] = str(ARGS.threads)

import numpy as np  # noqa: E402

try:
    import torch  # noqa: E402
    import torch.nn.functional as F  # noqa: E402
except ImportError:  # pragma: no cover
    sys.exit("PyTorch is needed for this benchmark only: .venv/bin/pip install torch==2.13.0")

from mlm_book.nn import encoder as enc  # noqa: E402
from mlm_book.nn.adam import Adam, AdamConfig  # noqa: E402
from mlm_book.nn.runtime import blas_threads, tune_allocator  # noqa: E402
from mlm_book.nn.train import corrupt_batch  # noqa: E402

torch.set_num_threads(ARGS.threads)

LR = 1e-3
WEIGHT_DECAY = 0.033  # the book's HMM encoder's (mlm_book.experiments.hmm_encoder.SETUP)


def hmm_size():
    """The HMM encoder's shape on 64 uniform random sequences, about 15 % of slots selected."""
    cfg = enc.EncoderConfig(vocab_size=25, length=24, d_model=32, n_blocks=2, n_heads=4)
    rng = np.random.default_rng(0)
    targets = rng.integers(0, cfg.vocab_size, size=(64, cfg.length))
    selected = rng.random(targets.shape) < 0.15
    shown = np.where(selected & (rng.random(selected.shape) < 0.8), cfg.mask_id, targets)
    return cfg, shown, targets, selected


def filing_size():
    """The book's filing encoder on one real training batch (centred windows with [PAD], corrupted as in training)."""
    from mlm_book.artefacts import filing_encoder as fe

    V = fe.filing_world().vocabulary.size
    cfg = fe.SETUP.encoder(V)
    rng = np.random.default_rng(1)
    targets = fe.training_source(fe.SETUP)(fe.training_config().batch_size, rng)
    shown, selected = corrupt_batch(fe.SETUP.channel(V), targets, cfg, rng)
    return cfg, shown, targets, selected


SIZES = {"HMM": hmm_size, "filings": filing_size}


class TorchEncoder(torch.nn.Module):
    """The same encoder in idiomatic PyTorch."""

    def __init__(self, cfg: enc.EncoderConfig):
        super().__init__()
        d = cfg.d_model
        self.cfg = cfg
        self.E = torch.nn.Parameter(torch.zeros(cfg.input_vocab_size, d))
        self.P = torch.nn.Parameter(torch.zeros(cfg.length, d))
        self.blocks = torch.nn.ModuleList()
        for _ in range(cfg.n_blocks):
            block = torch.nn.Module()
            block.ln1 = torch.nn.LayerNorm(d, eps=cfg.ln_eps)
            block.qkv = torch.nn.Linear(d, 3 * d)
            block.out = torch.nn.Linear(d, d)
            block.ln2 = torch.nn.LayerNorm(d, eps=cfg.ln_eps)
            block.fc1 = torch.nn.Linear(d, cfg.mlp_ratio * d)
            block.fc2 = torch.nn.Linear(cfg.mlp_ratio * d, d)
            self.blocks.append(block)
        self.ln_f = torch.nn.LayerNorm(d, eps=cfg.ln_eps)
        self.b_out = torch.nn.Parameter(torch.zeros(cfg.vocab_size))

    def load_numpy(self, params):
        with torch.no_grad():
            self.E.copy_(torch.from_numpy(params["E"]))
            self.P.copy_(torch.from_numpy(params["P"]))
            for i, block in enumerate(self.blocks):
                p = lambda name: torch.from_numpy(np.ascontiguousarray(params[f"blocks.{i}.{name}"]))  # noqa: E731
                block.ln1.weight.copy_(p("ln1.g")), block.ln1.bias.copy_(p("ln1.b"))
                block.qkv.weight.copy_(p("attn.W_qkv").T), block.qkv.bias.copy_(p("attn.b_qkv"))
                block.out.weight.copy_(p("attn.W_o").T), block.out.bias.copy_(p("attn.b_o"))
                block.ln2.weight.copy_(p("ln2.g")), block.ln2.bias.copy_(p("ln2.b"))
                block.fc1.weight.copy_(p("mlp.W_1").T), block.fc1.bias.copy_(p("mlp.b_1"))
                block.fc2.weight.copy_(p("mlp.W_2").T), block.fc2.bias.copy_(p("mlp.b_2"))
            self.ln_f.weight.copy_(torch.from_numpy(params["ln_f.g"]))
            self.ln_f.bias.copy_(torch.from_numpy(params["ln_f.b"]))
            self.b_out.copy_(torch.from_numpy(params["b_out"]))

    def forward(self, shown, targets, selected):
        B, n = shown.shape
        cfg = self.cfg
        h, dh = cfg.n_heads, cfg.d_model // cfg.n_heads
        x = self.E[shown] + self.P[:n]
        mask = None
        if cfg.pad:                          # hide [PAD] keys: (B, 1, 1, n), True = attend
            valid = shown != cfg.pad_id
            if not bool(valid.all()):
                mask = valid[:, None, None, :]
        for block in self.blocks:
            q, k, v = block.qkv(block.ln1(x)).view(B, n, 3, h, dh).permute(2, 0, 3, 1, 4)
            a = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
            x = x + block.out(a.transpose(1, 2).reshape(B, n, cfg.d_model))
            x = x + block.fc2(F.gelu(block.fc1(block.ln2(x)), approximate="tanh"))
        rows = self.ln_f(x[selected])
        logits = rows @ self.E[:cfg.vocab_size].T / math.sqrt(cfg.d_model) + self.b_out
        return F.cross_entropy(logits, targets[selected])


def matmul_flops(cfg: enc.EncoderConfig, batch: int, selected: int) -> float:
    """Matrix-product FLOPs of one training step of the full model (backward = 2 x forward)."""
    N, d, n = batch * cfg.length, cfg.d_model, cfg.length
    per_block = 2 * N * d * 3 * d + 4 * batch * n * n * d + 2 * N * d * d + 2 * 2 * N * d * cfg.mlp_ratio * d
    forward = cfg.n_blocks * per_block + 2 * selected * d * cfg.vocab_size
    return 3.0 * forward


def gemm_rate(n: int = 2048, reps: int = 5) -> float:
    """GFLOP/s of a large float32 NumPy GEMM."""
    a = np.random.default_rng(0).standard_normal((n, n), dtype=np.float32)
    b = np.random.default_rng(1).standard_normal((n, n), dtype=np.float32)
    a @ b
    times = []
    for _ in range(reps):
        start = time.perf_counter()
        a @ b
        times.append(time.perf_counter() - start)
    return 2 * n ** 3 / min(times) / 1e9


def bench(name: str, make):
    cfg, shown, targets, selected = make()
    batch = shown.shape[0]
    pad_share = float((shown == cfg.pad_id).mean()) if cfg.pad else 0.0
    rng = np.random.default_rng(0)
    params = enc.init_params(cfg, rng, dtype=np.float32)
    for value in params.values():           # move away from the all-zero biases, unit gains
        value += rng.normal(0.0, 0.02, size=value.shape).astype(np.float32)

    model = TorchEncoder(cfg)
    model.load_numpy(params)
    t_shown, t_targets, t_selected = (torch.from_numpy(a) for a in (shown, targets, selected))
    # same model: the losses and the table gradients agree before training (a [PAD] key left
    # unmasked moves the filing loss by about 1e-4 and gives the [PAD] row a gradient)
    np_loss, np_grads = enc.loss_and_grads_unchecked(params, cfg, shown, targets, selected)
    torch_loss = model(t_shown, t_targets, t_selected)
    torch_loss.backward()
    torch_loss = torch_loss.item()
    assert abs(np_loss - torch_loss) < 1e-5, (np_loss, torch_loss)
    for table, grad in (("E", model.E.grad), ("P", model.P.grad), ("b_out", model.b_out.grad)):
        gap = float(np.abs(np_grads[table] - grad.numpy()).max())
        assert gap <= 1e-3 * float(np.abs(np_grads[table]).max()), (table, gap)
    model.zero_grad(set_to_none=True)

    # decay the tables and the Linear weights; not biases, LayerNorm parameters or b_out
    decayed = [p for name, p in model.named_parameters() if name in ("E", "P") or
               (name.endswith(".weight") and ".ln" not in name and not name.startswith("ln_f"))]
    others = [p for p in model.parameters() if all(p is not q for q in decayed)]
    groups = [{"params": decayed, "weight_decay": WEIGHT_DECAY}, {"params": others, "weight_decay": 0.0}]
    try:
        optimiser = torch.optim.AdamW(groups, lr=LR, fused=True)
    except (RuntimeError, TypeError):  # pragma: no cover
        optimiser = torch.optim.AdamW(groups, lr=LR, foreach=True)
    assert len(decayed) == len(enc.decayed_names(cfg))
    numpy_adam = Adam(params, AdamConfig(weight_decay=WEIGHT_DECAY), decayed=enc.decayed_names(cfg))

    def numpy_steps():
        for _ in range(ARGS.inner):
            _, grads = enc.loss_and_grads_unchecked(params, cfg, shown, targets, selected)
            numpy_adam.step(grads, LR)

    def torch_steps():
        for _ in range(ARGS.inner):
            optimiser.zero_grad(set_to_none=True)
            loss = model(t_shown, t_targets, t_selected)
            loss.backward()
            optimiser.step()

    for _ in range(3):
        numpy_steps()
        torch_steps()
    numpy_times, torch_times = [], []
    for rep in range(ARGS.reps):
        order = (numpy_steps, torch_steps) if rep % 2 == 0 else (torch_steps, numpy_steps)
        for run in order:
            start = time.perf_counter()
            run()
            elapsed = (time.perf_counter() - start) / ARGS.inner
            (numpy_times if run is numpy_steps else torch_times).append(elapsed)
    numpy_times, torch_times = np.array(numpy_times), np.array(torch_times)
    ratio = float(np.median(numpy_times / torch_times))
    flops = matmul_flops(cfg, batch, int(selected.sum()))
    return {"name": name, "cfg": cfg, "batch": batch, "pad_share": pad_share, "selected": int(selected.sum()),
            "loss": (np_loss, torch_loss), "numpy_ms": 1e3 * np.median(numpy_times), "torch_ms": 1e3 * np.median(torch_times),
            "ratio": ratio, "gflop": flops / 1e9, "numpy_gflops": flops / np.median(numpy_times) / 1e9,
            "torch_gflops": flops / np.median(torch_times) / 1e9}


def main():
    tuned = tune_allocator()
    with blas_threads(ARGS.threads):
        peak = gemm_rate()
        results = [bench(name, make) for name, make in SIZES.items()]
        peak = max(peak, gemm_rate())
    print(f"threads {ARGS.threads} | torch {torch.__version__} | numpy {np.__version__} | "
          f"allocator tuned: {tuned} | {ARGS.reps} interleaved reps x {ARGS.inner} steps")
    for r in results:
        c = r["cfg"]
        print(f"  {r['name']}: V {c.vocab_size} (+[MASK]{' +[PAD]' if c.pad else ''}), d {c.d_model}, "
              f"{c.n_heads} heads, {c.n_blocks} blocks, L {c.length}, batch {r['batch']}, "
              f"{r['selected']} selected, {100 * r['pad_share']:.1f} % [PAD] slots, "
              f"loss NumPy {r['loss'][0]:.6f} / torch {r['loss'][1]:.6f}")
    print(f"large float32 GEMM (2048^3): {peak:.1f} GFLOP/s")
    print(f"{'size':8s} {'GFLOP/step':>10s} {'NumPy ms':>9s} {'torch ms':>9s} {'NumPy/torch':>12s} "
          f"{'NumPy GFLOP/s':>14s} {'torch GFLOP/s':>14s} {'NumPy % GEMM':>13s}")
    for r in results:
        print(f"{r['name']:8s} {r['gflop']:10.3f} {r['numpy_ms']:9.2f} {r['torch_ms']:9.2f} {r['ratio']:12.2f} "
              f"{r['numpy_gflops']:14.1f} {r['torch_gflops']:14.1f} {100 * r['numpy_gflops'] / peak:12.0f}%")
    for r in results:
        print(f"target: NumPy/torch <= 0.7 at the {r['name']} size: {r['ratio']:.2f} -> "
              + ("met" if r["ratio"] <= 0.7 else "NOT met"))


if __name__ == "__main__":
    main()
