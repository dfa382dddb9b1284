r"""Chapter 10's replaced-token detection against the masked LM at equal compute, as an artefact.

A run ([`RTDRun`][mlm_book.artefacts.replaced_tokens.RTDRun]) trains, at one seed, one of three encoders of the
book's HMM encoder's shape (`mlm_book.artefacts.hmm_encoder.SETUP`) on
fresh sentences of the HMM language, and measures it:

* ``"masked-lm"``: the book's masked LM (BERT's channel, the book's recipe) for `BASELINE_STEPS` steps;
* ``"electra"``: a replaced-token discriminator trained jointly with a small masked-LM generator (`GENERATOR`,
  half the width) as in Clark et al. 2020 ([`mlm_book.nn.replaced_tokens`][mlm_book.nn.replaced_tokens]);
* ``"oracle"``: the same discriminator fed by the oracle generator, replacements drawn from the exact posterior.

**The equal-compute rule**, fixed before any run: a step's cost is the FLOP count of
[`step_flops`][mlm_book.nn.replaced_tokens.step_flops] (matrix products, forward and backward, of every network
trained in the step); every objective gets the number of steps, rounded to the nearest integer, that spends what
`BASELINE_STEPS` steps of the masked LM spend, on batches of the same size. The oracle is not a network and costs
nothing in this count (it is a thought experiment on the generator, not a competitor for compute). Everything else
is the book's recipe (decay, Adam's constants, the cosine to 2 %), with the warm-up kept at the book's fraction of
the steps (200 of 3000), except the peak rate of the discriminators (and the joint generator): `DISCRIMINATOR_LR`,
chosen from a pilot's training losses by a rule fixed before it (the comment above that constant); at the book's
rate the discriminator's loss stayed at the entropy of the replaced share.

The book's own HMM encoders (3000 steps) are not the baseline: an equal-compute discriminator would need about
2300 steps and the other part of the budget; and the issue fixes 1000-step runs, so the baseline is the same
recipe stopped at `BASELINE_STEPS`, trained here at each seed.

Each run stores its loss curves and, at every layer (0: the input vectors, 1 and 2: after each block), chapter 5's
sense probe for $w$ on the book's splits ([`mlm_book.hmm_splits.SPLITS`][mlm_book.hmm_splits.SPLITS]) and the
share of the exact sense posterior its read-out recovers
([`recovered_share`][mlm_book.artefacts.replaced_tokens.recovered_share]). What chapter 10 makes of them is
[`mlm_book.experiments.ch10_replaced_tokens`][mlm_book.experiments.ch10_replaced_tokens].
"""

from __future__ import annotations

import functools
from dataclasses import asdict, dataclass, replace

import numpy as np

from mlm_book import artefacts, cache, probe
from mlm_book.artefacts import hmm_encoder
from mlm_book.hmm import default_hmm, sense_posteriors
from mlm_book.hmm_splits import SPLITS, SplitConfig, hmm_split
from mlm_book.nn import encoder as enc
from mlm_book.nn import replaced_tokens as rt
from mlm_book.nn.loop import TrainConfig
from mlm_book.nn.train import train
from mlm_book.validation import as_float_array, check_instance, check_positive_int

__all__ = ["OBJECTIVES", "BASELINE_STEPS", "GENERATOR", "SEEDS", "DISCRIMINATOR_LR", "RTDRun", "book_runs", "step_cost", "steps_for",
           "recovered_share", "run_outputs", "is_built", "ARTEFACT_KINDS"]

OBJECTIVES = ("masked-lm", "electra", "oracle")
"""The three pre-training objectives compared, by name."""
BASELINE_STEPS = 1000
"""Steps of the masked LM; the others get the steps of equal compute (see `steps_for`)."""
GENERATOR = replace(hmm_encoder.SETUP.encoder, d_model=16, n_heads=2)
"""ELECTRA's generator: the discriminator's shape at half its width (Clark et al. find a quarter to a half best),
the same head width 8."""
SEEDS = hmm_encoder.SEEDS
"""The book's five training seeds."""

# The discriminator's (and its joint generator's) peak learning rate, chosen by a rule fixed before its pilot:
# candidates 1e-2 (the masked LM's, the book's), 3e-3, 1e-3 and 3e-4; the pilot is the joint-generator run
# ("electra") at the book seed (SEEDS[0]) with its equal-compute step count; the rate chosen is the one whose
# discriminator training loss, averaged over the pilot's last 100 steps, lies furthest below the binary entropy of
# the replaced share (averaged over the same steps); ties go to the larger rate. Only training-loss curves are
# read: no probe, no recovered share, no claim. The masked LM keeps the book's rate (its recipe is the book's).
# The pilot is not stored in the book's store.
# The pilot (2026-12-03, 784 steps, warm-up 52, seed 20240601; script outside the package, 93 s of CPU for the four):
#   peak rate   discriminator loss   replaced share   binary entropy   gap below it   generator loss   (last 100 steps)
#   1e-2        0.38758              0.13084          0.38797          0.00039        2.367
#   3e-3        0.38958              0.13229          0.39072          0.00115        2.431
#   1e-3        0.38934              0.13319          0.39240          0.00307        2.489
#   3e-4        0.39070              0.13496          0.39571          0.00501        2.608
# The rule chooses 3e-4, the smallest candidate (so the best rate may lie lower still; the rule does not look).
# The gap grows as the rate falls partly because the replaced share rises (a weaker generator), and at every rate
# the discriminator learns little: at 3e-4 about 1.3 % of the entropy.
DISCRIMINATOR_LR = 3e-4
"""Peak learning rate of the discriminator and its joint generator (the masked LM keeps the book's), chosen by the
rule above from a pilot's loss curves."""


@dataclass(frozen=True)
class RTDRun:
    """One objective at one seed: the encoder, the generator, the budget and the probe splits.

    Attributes
    ----------
    objective : {"masked-lm", "electra", "oracle"}
    seed : int
        Initialises the networks and draws every batch.
    setup : HMMEncoderSetup
        The masked LM's setup (`hmm_encoder.SETUP` in the book): its encoder is the discriminator's shape, its
        training recipe everyone's, its length the sentences'.
    generator : EncoderConfig
        `GENERATOR` in the book (read by ``"electra"`` only); its vocabulary must be the encoder's.
    baseline_steps : int
        `BASELINE_STEPS` in the book.
    splits : SplitConfig
        The probe splits (`SPLITS`).

    Raises
    ------
    TypeError, ValueError
        If a field has the wrong type, the objective is unknown or the generator's vocabulary is not the encoder's.

    Examples
    --------
    >>> run = RTDRun("electra", 1)
    >>> run.training().steps
    784
    >>> RTDRun("electra", 1, generator=replace(GENERATOR, vocab_size=24))
    Traceback (most recent call last):
    ...
    ValueError: generator must have the discriminator's vocabulary (25 tokens), got a generator of vocab_size 24
    """

    objective: str
    seed: int
    setup: hmm_encoder.HMMEncoderSetup = hmm_encoder.SETUP
    generator: enc.EncoderConfig = GENERATOR
    baseline_steps: int = BASELINE_STEPS
    splits: SplitConfig = SPLITS

    def __post_init__(self):
        if not isinstance(self.objective, str) or self.objective not in OBJECTIVES:
            raise ValueError(f"objective must be one of {OBJECTIVES}, got {self.objective!r}")
        check_positive_int(self.seed, "seed", minimum=0)
        check_instance(self.setup, "setup", hmm_encoder.HMMEncoderSetup)
        check_instance(self.generator, "generator", enc.EncoderConfig)
        if self.generator.vocab_size != self.setup.encoder.vocab_size:
            raise ValueError(f"generator must have the discriminator's vocabulary ({self.setup.encoder.vocab_size} "
                             f"tokens), got a generator of vocab_size {self.generator.vocab_size}")
        check_positive_int(self.baseline_steps, "baseline_steps")
        check_instance(self.splits, "splits", SplitConfig)
        if self.splits.length > self.setup.encoder.length:
            raise ValueError(f"splits.length must be at most the encoder's length {self.setup.encoder.length}, "
                             f"got {self.splits.length}")

    def training(self) -> TrainConfig:
        """The run's schedule: the book's recipe at the steps of equal compute, warm-up at the book's fraction, and
        the discriminator's peak rate `DISCRIMINATOR_LR` for the two discriminators."""
        steps = steps_for(self.objective, self.setup, self.generator, self.baseline_steps)
        book = hmm_encoder.SETUP.training
        warmup = max(1, round(steps * book.warmup / book.steps))
        lr = self.setup.training.lr if self.objective == "masked-lm" else DISCRIMINATOR_LR
        return replace(self.setup.training, steps=steps, warmup=warmup, seed=self.seed, lr=lr)


def step_cost(objective: str, setup: hmm_encoder.HMMEncoderSetup = hmm_encoder.SETUP,
              generator: enc.EncoderConfig = GENERATOR) -> float:
    """FLOPs of one training step of ``objective`` (every network it trains; the oracle counts nothing).

    Examples
    --------
    >>> round(step_cost("electra") / step_cost("masked-lm"), 3)
    1.276
    """
    if not isinstance(objective, str) or objective not in OBJECTIVES:
        raise ValueError(f"objective must be one of {OBJECTIVES}, got {objective!r}")
    check_instance(setup, "setup", hmm_encoder.HMMEncoderSetup)
    check_instance(generator, "generator", enc.EncoderConfig)
    batch, n, V = setup.training.batch_size, setup.length, setup.encoder.vocab_size
    if objective == "masked-lm":
        return rt.step_flops(setup.encoder, batch, n, setup.rho * n, V)
    flops = rt.step_flops(setup.encoder, batch, n, n, 1)
    if objective == "electra":
        flops += rt.step_flops(generator, batch, n, setup.rho * n, V)
    return flops


def steps_for(objective: str, setup: hmm_encoder.HMMEncoderSetup = hmm_encoder.SETUP,
              generator: enc.EncoderConfig = GENERATOR, baseline_steps: int = BASELINE_STEPS) -> int:
    """Steps of ``objective`` that spend the FLOPs of ``baseline_steps`` steps of the masked LM (nearest integer).

    Examples
    --------
    >>> [steps_for(name) for name in OBJECTIVES]
    [1000, 784, 1003]
    """
    baseline_steps = check_positive_int(baseline_steps, "baseline_steps")
    return max(1, round(baseline_steps * step_cost("masked-lm", setup, generator)
                        / step_cost(objective, setup, generator)))


def book_runs() -> tuple[RTDRun, ...]:
    """Every run the book reads: each objective at each of `SEEDS`.

    Examples
    --------
    >>> len(book_runs())
    15
    """
    return tuple(RTDRun(objective, seed) for seed in SEEDS for objective in OBJECTIVES)


def recovered_share(posterior, read_out, prior: float) -> float:
    r"""How much of the exact posterior a read-out recovers: $1 - \overline{\mathrm{KL}}(\pi \Vert q) /
    \overline{\mathrm{KL}}(\pi \Vert \pi_0)$.

    $\pi_i$ is the exact probability of sense b at occurrence $i$, $q_i$ the read-out's, $\pi_0$ a constant guess
    (the training share of sense b): 1 when the read-out is the exact posterior, 0 when it knows no more than
    the constant, negative when it knows less.

    Parameters
    ----------
    posterior, read_out : array of float, shape (k,)
        Probabilities of sense b, in [0, 1] (the read-out's in (0, 1)).
    prior : float
        In (0, 1).

    Raises
    ------
    TypeError, ValueError
        If an argument is not a probability (vector) of the right shape, or the posterior equals the prior
        everywhere.

    Examples
    --------
    >>> p = np.array([0.9, 0.2, 0.6])
    >>> recovered_share(p, p, 0.5), recovered_share(p, np.full(3, 0.5), 0.5)
    (1.0, 0.0)
    """
    posterior = as_float_array(posterior, "posterior", ndim=1)
    read_out = as_float_array(read_out, "read_out", ndim=1)
    if read_out.shape != posterior.shape:
        raise ValueError(f"read_out must have posterior's shape {posterior.shape}, got {read_out.shape}")
    if not np.all((posterior >= 0) & (posterior <= 1)):
        raise ValueError("posterior must hold probabilities in [0, 1]")
    if not np.all((read_out > 0) & (read_out < 1)):
        raise ValueError("read_out must hold probabilities in (0, 1)")
    if isinstance(prior, bool) or not isinstance(prior, (int, float, np.floating)) or not 0 < prior < 1:
        raise ValueError(f"prior must be a probability in (0, 1), got {prior!r}")

    def kl(q):
        q = np.asarray(q, dtype=np.float64)
        with np.errstate(divide="ignore", invalid="ignore"):
            a = np.where(posterior > 0, posterior * np.log(posterior / q), 0.0)
            b = np.where(posterior < 1, (1 - posterior) * np.log((1 - posterior) / (1 - q)), 0.0)
        return float(np.mean(a + b))

    base = kl(np.full(posterior.shape, float(prior)))
    if base <= 0:
        raise ValueError("posterior must differ from prior somewhere (nothing to recover otherwise)")
    return 1.0 - kl(read_out) / base


def _train(run: RTDRun):
    """The trained encoder's ``(params, config, losses)``: ``losses`` a dict of per-step arrays."""
    setup, training = run.setup, run.training()
    source, _ = hmm_encoder.sentence_source(setup)
    rng = np.random.default_rng(run.seed)
    if run.objective == "masked-lm":
        result = train(setup.encoder, training, source, setup.channel(), rng, progress=False)
        return result.params, setup.encoder, {"masked-lm": result.losses}
    generator = run.generator if run.objective == "electra" else None
    result = rt.train_rtd(setup.encoder, generator, training, source, rng, rho=setup.rho, hmm=default_hmm(),
                          progress=False)
    return result.params, setup.encoder, result.losses


def _measure(params, config, splits: SplitConfig) -> dict:
    hmm = default_hmm()
    data = []
    for name in ("train", "test"):
        split = hmm_split(name, splits)
        mask = split.tokens == hmm.shared_token
        hidden = enc.hidden_states(params, config, split.tokens)
        data.append(([np.asarray(h, dtype=np.float64)[mask] for h in hidden],
                     (split.states[mask] == hmm.sense_states[1]).astype(np.int64),
                     sense_posteriors(hmm, split.tokens)[mask][:, 1]))
    (train_x, train_y, _), (test_x, test_y, posterior) = data
    prior = float(train_y.mean())
    accuracy, share = [], []
    for layer in range(len(test_x)):
        fitted = probe.fit_and_score(train_x[layer], train_y, test_x[layer], test_y)
        accuracy.append(fitted.accuracy)
        read_out = fitted.model.predict_proba(test_x[layer])[:, list(fitted.model.classes).index(1)]
        share.append(recovered_share(posterior, np.clip(read_out, 1e-12, 1 - 1e-12), prior))
    return {"probe": np.array(accuracy), "recovered": np.array(share)}


def _run(run: RTDRun) -> dict:
    params, config, losses = _train(run)
    out = {f"losses/{name}": np.asarray(values, dtype=np.float64) for name, values in losses.items()}
    out.update(_measure(params, config, run.splits))
    out.update({f"param/{k}": v for k, v in params.items()})
    return out


def _key(run: RTDRun) -> dict:
    return {"run": asdict(run), "training": run.training().to_dict(),
            "source": hmm_encoder.sentence_source(run.setup)[1]}


@functools.cache
def run_outputs(run: RTDRun) -> dict:
    """The stored arrays of ``run`` (from the store, or computed now and stored).

    ``probe`` and ``recovered``: per layer (0, 1, 2), the sense probe's test accuracy and the recovered share of
    the exact sense posterior; ``losses/<name>``: per step (``masked-lm`` for the masked LM; ``total``,
    ``generator``, ``discriminator`` and ``replaced`` for the others); ``param/<name>``: the encoder's parameters.

    Raises
    ------
    TypeError
        If ``run`` is not an `RTDRun`.
    """
    check_instance(run, "run", RTDRun)
    arrays, _ = cache.cached("replaced-tokens", _key(run), [artefacts.key_source("replaced-tokens")],
                             lambda: (_run(run), {}))
    return arrays


def is_built(run: RTDRun) -> bool:
    """Whether the store holds ``run`` (a damaged entry counts as absent).

    Raises
    ------
    TypeError
        If ``run`` is not a `RTDRun`.

    Examples
    --------
    The book's first run (the answer depends on what the store holds; asking builds nothing):

    >>> isinstance(is_built(book_runs()[0]), bool)
    True
    """
    check_instance(run, "run", RTDRun)
    return cache.load(cache.entry_for("replaced-tokens", _key(run),
                                      [artefacts.key_source("replaced-tokens")])) is not None


def _tiny() -> RTDRun:
    setup = hmm_encoder.tiny_setup()
    return RTDRun("electra", 0, setup=setup, generator=replace(setup.encoder, d_model=4, n_heads=1),
                  baseline_steps=3, splits=SplitConfig(n_train=40, n_test=40, length=6))


def _build(run: RTDRun) -> None:
    run_outputs(run)  # in a worker process: it only has to land in the store


# ----------------------------------------------------------------------------- the declaration (not keyed)
# Seconds of one run on one core: a timing of 40 steps of each objective at the book's batch (2026-12-03, the
# machine shared with another build) gave 41, 97 and 77 ms per step for the masked LM, the joint pair and the
# oracle-fed discriminator; the book encoder's own 3000 steps take 22 s on a quiet core (7.3 ms a step), so the
# timing ran about 5.6 times slow. Scaled to a quiet core: 7.3, 17 and 14 ms a step, and about 2 s of probing
# (in all 3.4 core-minutes for the 15 runs). The book build of the 15 runs (2026-12-03, --jobs 1, the two cores shared
# with four other builds and test runs at a load near 11) took 24:40 wall and 7.0 minutes of CPU (user time): per run
# 1:33-2:30 wall for the oracle, 1:21-1:42 for the joint pair and 1:02-1:54 for the masked LM. CPU time on a
# contended machine overstates a quiet one's, so the estimate is kept; a quiet cold build should check it.
# Rebuilt at the discriminators' rate 3e-4 (2026-12-03, --jobs 2, load near 9): 9:36 wall, 6.9 minutes of CPU
# (user time) for the 15 runs, 0:32-1:33 wall a run.
_MS_PER_STEP = {"masked-lm": 7.3, "electra": 17.0, "oracle": 14.0}

ARTEFACT_KINDS = (artefacts.Kind(
    name="replaced-tokens", chapter=10,
    summary="chapter 10's replaced-token detection: the masked LM, ELECTRA's discriminator with a joint generator "
            "and with the oracle, at equal compute, 5 seeds each, with their sense probes",
    modules=("mlm_book.artefacts.replaced_tokens", "mlm_book.nn.replaced_tokens", "mlm_book.probe",
             "mlm_book.hmm", "mlm_book.hmm_splits", "mlm_book.channel", "mlm_book.nn.train", "mlm_book.nn.loop",
             "mlm_book.nn.encoder",
             "mlm_book.nn.layers", "mlm_book.nn.adam", "mlm_book.nn.runtime", "mlm_book.artefacts.hmm_encoder"),
    setups=book_runs, is_built=is_built, build=_build,
    cost=lambda run: 2.0 + _MS_PER_STEP[run.objective] * run.training().steps * run.training().batch_size / 160e3,
    describe=lambda run: f"{run.objective}, seed {run.seed}", tiny=_tiny),)
