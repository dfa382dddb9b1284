"""Time `mlm_book.crf_fit.fit_crf` at chapter 9's size: B = 3000 sentences, n = 16, d = 64, K = 9.

Usage::

    .venv/bin/python benchmarks/bench_crf_fit.py [--ragged] [--tol 1e-5] [--compare-tol 1e-7]

The data are synthetic and seeded: BIO tags of four entity types (``O`` and ``B-``/``I-``
of A, B, C, D) drawn from a Markov chain over the valid BIO sequences (a tag follows itself with four
times the weight of any other allowed tag),
and each token's vector is its tag's mean (standard normal, fixed per tag) plus noise of
standard deviation 2 in every one of the 64 dimensions. Every sentence has 16 tokens,
or, with ``--ragged``, a length drawn uniformly from 4 to 16. The script fits the CRF
without and with the BIO mask and reports the seconds, the L-BFGS iterations and the
gradient norm reached, the time of Viterbi decoding of all sentences and, with
``--compare-tol``, how many decoded tags change when the fit runs on to that tighter
tolerance.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from mlm_book import crf_fit, tagging


def sample(rng, batch, padded, d, ragged):
    tag_set = tagging.tags_for_types(["A", "B", "C", "D"], "BIO")
    n_tags = len(tag_set)
    mask = tagging.allowed_transitions(tag_set, "BIO")
    weights = np.where(mask[:n_tags, :n_tags], 1.0, 0.0) + 3 * np.eye(n_tags) * mask[:n_tags, :n_tags]
    chain = weights / weights.sum(axis=1, keepdims=True)
    first = mask[n_tags, :n_tags] / mask[n_tags, :n_tags].sum()
    tags = np.zeros((batch, padded), dtype=np.int64)
    tags[:, 0] = rng.choice(n_tags, size=batch, p=first)
    for t in range(1, padded):
        cumulative = chain[tags[:, t - 1]].cumsum(axis=1)
        tags[:, t] = np.minimum((rng.random(batch)[:, None] > cumulative).sum(axis=1), n_tags - 1)
    means = rng.normal(size=(n_tags, d))
    features = means[tags] + 2.0 * rng.normal(size=(batch, padded, d))
    lengths = rng.integers(4, padded + 1, size=batch) if ragged else np.full(batch, padded)
    return tag_set, mask, features, lengths, tags


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ragged", action="store_true")
    parser.add_argument("--tol", type=float, default=crf_fit.GRADIENT_TOLERANCE)
    parser.add_argument("--compare-tol", type=float, default=None)
    args = parser.parse_args()
    tag_set, mask, features, lengths, tags = sample(np.random.default_rng(0), 3000, 16, 64, args.ragged)
    n_tags = len(tag_set)
    print(f"B = {features.shape[0]}, n = {features.shape[1]}, d = {features.shape[2]}, K = {n_tags}, "
          f"tokens = {int(lengths.sum())}")
    for allowed in (None, mask):
        start = time.perf_counter()
        tagger = crf_fit.fit_crf(features, lengths, tags, n_tags, allowed=allowed, tol=args.tol)
        seconds = time.perf_counter() - start
        print(f"fit_crf, {'BIO mask' if allowed is not None else 'no mask '}: {seconds:5.2f} s, "
              f"{tagger.iterations} iterations ({1e3 * seconds / max(tagger.iterations, 1):.0f} ms each), "
              f"converged {tagger.converged}, "
              f"gradient {tagger.gradient_norm:.1e}, F = {tagger.objective:.8f}")
        start = time.perf_counter()
        paths = crf_fit.decode(tagger, features, lengths, allowed=allowed)
        print(f"  decode: {time.perf_counter() - start:.2f} s")
        if args.compare_tol is not None:
            tight = crf_fit.fit_crf(features, lengths, tags, n_tags, allowed=allowed, tol=args.compare_tol,
                                    max_iter=5000)
            changed = sum(int(np.sum(a != b)) for a, b in zip(paths, crf_fit.decode(tight, features, lengths,
                                                                                    allowed=allowed)))
            print(f"  to tol {args.compare_tol:g}: {tight.iterations} iterations, F = {tight.objective:.8f}, "
                  f"{changed} of {int(lengths.sum())} decoded tags change")


if __name__ == "__main__":
    main()
