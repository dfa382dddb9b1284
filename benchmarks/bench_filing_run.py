"""Whole-run overhead of training the book's filing encoder: the loop against its bare steps.

Usage::

    .venv/bin/python benchmarks/bench_filing_run.py [--steps 300] [--runs 3] [--threads 1]

The filing encoder (:mod:`mlm_book.artefacts.filing_encoder`) trains through
:func:`mlm_book.nn.train.train`: at every step it draws 120 centred windows from the
training source, corrupts them (``corrupt_batch``), and takes one loss and gradient
(``enc.loss_and_grads_unchecked``) and one AdamW step. This script times ``--steps`` steps
of that real loop (the book's encoder, source, channel and ``training_config()`` with only
``steps`` replaced; initialisation included) and, in the same process, the *bare step*:
loss, gradients and AdamW on corrupted batches drawn beforehand, each step timed alone,
the median taken. It prints the overhead share

    (run - steps x bare step) / run        target: < 25 %

and, so that a reader sees where overhead goes, the median time of one source draw and of
one corruption, and the share of the run they account for. Runs and blocks of bare steps
alternate (bare, run, bare, run, ..., bare), so a loaded machine slows both alike; the
overhead share is the median over runs, each against the median of all bare steps (the
fastest run's share is printed too: a burst of other work on the machine lengthens a run).
Threads: one BLAS thread (set before NumPy is imported), as training uses.
"""

from __future__ import annotations

import argparse
import os
import time
from dataclasses import replace


def parse():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=300, help="training steps per timed run (default 300)")
    parser.add_argument("--runs", type=int, default=3, help="timed runs of the training loop (default 3)")
    parser.add_argument("--bare", type=int, default=40, help="bare steps timed in each block (default 40)")
    parser.add_argument("--threads", type=int, default=1, help="BLAS threads (default 1)")
    return parser.parse_args()


ARGS = parse()
for variable in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[variable] = str(ARGS.threads)

import numpy as np  # noqa: E402

from mlm_book.artefacts import filing_encoder as fe  # noqa: E402
from mlm_book.nn import encoder as enc  # noqa: E402
from mlm_book.nn.adam import Adam  # noqa: E402
from mlm_book.nn.loop import learning_rate  # noqa: E402
from mlm_book.nn.runtime import blas_threads, tune_allocator  # noqa: E402
from mlm_book.nn.train import corrupt_batch, train  # noqa: E402

TARGET = 0.25


def median_call(function, reps: int) -> float:
    """Median seconds of ``reps`` calls of ``function()``, each timed alone."""
    times = []
    for _ in range(reps):
        start = time.perf_counter()
        function()
        times.append(time.perf_counter() - start)
    return float(np.median(times))


def bare_block_timed(block):
    """``block()`` with the BLAS thread count in force."""
    with blas_threads(ARGS.threads):
        return block()


def main():
    V = fe.filing_world().vocabulary.size          # load the corpus (cached) before any timing
    cfg = fe.SETUP.encoder(V)
    config = replace(fe.training_config(), steps=ARGS.steps, blas_threads=ARGS.threads)
    source = fe.training_source(fe.SETUP)            # builds the split once, outside the timing
    channel = fe.SETUP.channel(V)
    tuned = tune_allocator()

    rng = np.random.default_rng(0)
    batches = []
    for _ in range(ARGS.bare):
        clean = source(config.batch_size, rng)
        batches.append((clean, *corrupt_batch(channel, clean, cfg, rng)))
    pad_share = float(np.mean([(clean == cfg.pad_id).mean() for clean, _, _ in batches]))

    params = enc.init_params(cfg, np.random.default_rng(config.seed), dtype=np.dtype(config.dtype))
    optimiser = Adam(params, config.adam(), decayed=enc.decayed_names(cfg))
    counter = [0]

    def bare_step():
        clean, shown, selected = batches[counter[0] % len(batches)]
        _, grads = enc.loss_and_grads_unchecked(params, cfg, shown, clean, selected)
        optimiser.step(grads, learning_rate(config, counter[0] % config.steps))
        counter[0] += 1

    def bare_block():
        times = []
        for _ in range(len(batches)):
            start = time.perf_counter()
            bare_step()
            times.append(time.perf_counter() - start)
        return times

    with blas_threads(ARGS.threads):
        for _ in range(10):                  # warm-up: allocator, BLAS buffers
            bare_step()
        source_s = median_call(lambda: source(config.batch_size, rng), 200)
        clean = source(config.batch_size, rng)
        corrupt_s = median_call(lambda: corrupt_batch(channel, clean, cfg, rng), 200)

    bare_times, runs = bare_block_timed(bare_block), []
    for run in range(ARGS.runs):
        start = time.perf_counter()
        train(cfg, replace(config, seed=config.seed + run), source, channel,
              np.random.default_rng(config.seed + run), progress=False)
        runs.append(time.perf_counter() - start)
        bare_times += bare_block_timed(bare_block)

    step_s = float(np.median(bare_times))
    overheads = [(r - ARGS.steps * step_s) / r for r in runs]
    share = float(np.median(overheads))
    run_s = float(np.median(runs))
    per_step = run_s / ARGS.steps

    print(f"filing encoder: V {V} (+[MASK] +[PAD]), d {cfg.d_model}, {cfg.n_heads} heads, {cfg.n_blocks} blocks, "
          f"L {cfg.length}, batch {config.batch_size}, {100 * pad_share:.1f} % [PAD] slots | "
          f"threads {ARGS.threads} | numpy {np.__version__} | allocator tuned: {tuned}")
    print(f"bare step (loss + grads + AdamW, pre-drawn batches): median {1e3 * step_s:.2f} ms "
          f"over {len(bare_times)} steps")
    print(f"training loop, {ARGS.steps} steps: " + ", ".join(f"{r:.2f} s" for r in runs)
          + f" (median {run_s:.2f} s, {1e3 * per_step:.2f} ms a step)")
    print(f"  one source draw ({config.batch_size} windows): {1e3 * source_s:.3f} ms "
          f"({100 * source_s / per_step:.1f} % of a loop step)")
    print(f"  one corruption (corrupt_batch):         {1e3 * corrupt_s:.3f} ms "
          f"({100 * corrupt_s / per_step:.1f} % of a loop step)")
    rest = per_step - step_s - source_s - corrupt_s
    print(f"  rest of a loop step over the bare step (unattributed): {1e3 * rest:.3f} ms "
          f"({100 * rest / per_step:.1f} %)")
    print(f"overhead share (run - {ARGS.steps} x bare step) / run: "
          + ", ".join(f"{100 * o:.1f} %" for o in overheads)
          + f" (median {100 * share:.1f} %; fastest run, least disturbed: {100 * min(overheads):.1f} %)")
    print(f"target: overhead share < {100 * TARGET:.0f} % -> " + ("met" if share < TARGET else "NOT met"))


if __name__ == "__main__":
    main()
