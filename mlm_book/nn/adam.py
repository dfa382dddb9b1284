r"""Adam (Kingma & Ba, 2015) over a dict of parameter arrays, with optional decoupled weight decay (AdamW).

With gradient $g_t$ at step $t = 1, 2, \dots$:

$$ m_t = \beta_1 m_{t-1} + (1-\beta_1) g_t, \qquad v_t = \beta_2 v_{t-1} + (1-\beta_2) g_t^2, $$
$$ \theta_t = (1 - \eta_t \lambda\, \mathbb{1}[\theta \in D])\, \theta_{t-1}
   - \eta_t\, \frac{m_t / (1-\beta_1^t)}{\sqrt{v_t / (1-\beta_2^t)} + \epsilon} . $$

The constants default to Kingma and Ba's: $\beta_1 = 0.9$, $\beta_2 = 0.999$,
$\epsilon = 10^{-8}$; no clipping. The learning rate $\eta_t$ is passed at each step, so the
schedule lives with the training loop.

The weight decay $\lambda$ (default 0: plain Adam) is *decoupled* (Loshchilov & Hutter,
2019): it shrinks the parameter itself by $\eta_t \lambda$ of its value, outside the
moment averages, instead of adding $\lambda \theta$ to the gradient (which Adam would
then rescale coordinate by coordinate). It applies only to the parameters in the set $D$,
named when the optimiser is built; BERT, for instance, decays its weight matrices and
embedding tables with $\lambda = 0.01$ and exempts biases and LayerNorm gains and offsets.
This is the update of ``torch.optim.AdamW`` and of BERT's ``AdamWeightDecayOptimizer``
(which, unlike this one, also omits the bias corrections).

When the parameters are views into one contiguous buffer (as
[`mlm_book.nn.encoder.init_params`][mlm_book.nn.encoder.init_params] makes them), the update runs as a few vector
operations over the whole buffer instead of a few per tensor: a "fused" Adam.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from mlm_book.validation import check_real, check_sequence

__all__ = ["AdamConfig", "Adam"]


@dataclass(frozen=True)
class AdamConfig:
    """Adam's constants.

    Parameters
    ----------
    beta1 : float
        Decay of the first-moment average.
    beta2 : float
        Decay of the second-moment average.
    eps : float
        Added to the bias-corrected root second moment.
    weight_decay : float
        Decoupled weight decay $\\lambda$: each step multiplies a decayed parameter by
        $1 - \\eta_t \\lambda$. Zero (the default) is plain Adam.

    Examples
    --------
    >>> AdamConfig()
    AdamConfig(beta1=0.9, beta2=0.999, eps=1e-08, weight_decay=0.0)
    """

    beta1: float = 0.9
    beta2: float = 0.999
    eps: float = 1e-8
    weight_decay: float = 0.0

    def __post_init__(self):
        for name in ("beta1", "beta2"):
            value = getattr(self, name)
            if not (isinstance(value, (int, float)) and 0.0 <= value < 1.0):
                raise ValueError(f"{name} must be in [0, 1), got {value!r}")
        if not (isinstance(self.eps, (int, float)) and self.eps > 0 and math.isfinite(self.eps)):
            raise ValueError(f"eps must be a positive number, got {self.eps!r}")
        if (isinstance(self.weight_decay, bool) or not isinstance(self.weight_decay, (int, float))
                or not (0.0 <= self.weight_decay and math.isfinite(self.weight_decay))):
            raise ValueError(f"weight_decay must be a non-negative number, got {self.weight_decay!r}")


def _shared_buffer(arrays):
    """The 1-D buffer all ``arrays`` are consecutive views of, in order, or ``None``."""
    first = arrays[0]
    base = first.base
    if base is None or base.ndim != 1 or not base.flags.c_contiguous:
        return None
    start = first.__array_interface__["data"][0]
    if start != base.__array_interface__["data"][0]:
        return None
    position = start
    for array in arrays:
        if array.base is not base or not array.flags.c_contiguous or array.__array_interface__["data"][0] != position:
            return None
        position += array.nbytes
    if position != start + base.nbytes:
        return None
    return base


class Adam:
    """Adam state for a dict of parameters; [`step`][mlm_book.nn.adam.Adam.step] updates them in place.

    Parameters
    ----------
    params : dict of str to ndarray
        Updated in place by [`step`][mlm_book.nn.adam.Adam.step].
    config : AdamConfig
        The constants.
    decayed : iterable of str, optional
        Names of the parameters that ``config.weight_decay`` applies to (the set $D$ of the
        module docstring); default: every parameter. Ignored when the decay is zero.

    Raises
    ------
    TypeError
        If ``config`` is not an [`AdamConfig`][mlm_book.nn.adam.AdamConfig], ``params`` is not a dict of
        float arrays, or ``decayed`` is a single string, not iterable or holds a non-string.
    ValueError
        If ``params`` is empty or ``decayed`` names a parameter that is not in it.

    Examples
    --------
    One step on $f(\\theta) = \\theta^2/2$ from $\\theta = 1$: the bias-corrected step has
    size $\\eta$ (up to $\\epsilon$).

    >>> theta = {"w": np.array([1.0])}
    >>> opt = Adam(theta)
    >>> opt.step({"w": theta["w"].copy()}, lr=0.1)
    >>> round(float(theta["w"][0]), 6)
    0.9

    With decoupled decay $\\lambda = 0.5$ on ``"w"`` only, the same step first shrinks $w$ by
    $\\eta\\lambda = 0.05$ of its value; the bias ``"b"`` (zero gradient) is left alone.

    >>> theta = {"w": np.array([1.0]), "b": np.array([1.0])}
    >>> opt = Adam(theta, AdamConfig(weight_decay=0.5), decayed=["w"])
    >>> opt.step({"w": np.array([1.0]), "b": np.array([0.0])}, lr=0.1)
    >>> round(float(theta["w"][0]), 6), float(theta["b"][0])
    (0.85, 1.0)
    """

    def __init__(self, params: dict, config: AdamConfig = AdamConfig(), decayed=None):
        if not isinstance(config, AdamConfig):
            raise TypeError(f"config must be an AdamConfig, got {type(config).__name__}")
        if not isinstance(params, dict):
            raise TypeError(f"params must be a dict of str to float arrays, got {type(params).__name__}")
        if not params:
            raise ValueError("params must hold at least one array")
        for name, array in params.items():
            # updated in place, so it must already be a float array (a list would be copied)
            if not isinstance(array, np.ndarray) or array.dtype.kind != "f":
                raise TypeError(f"params[{name!r}] must be a float numpy array, got {type(array).__name__}")
            if not np.all(np.isfinite(array)):
                raise ValueError(f"params[{name!r}] must be finite (no NaN or infinity)")
        self.config = config
        self.names = tuple(params)
        self.params = params
        if decayed is None:
            decayed = self.names
        elif isinstance(decayed, str):
            raise TypeError("decayed must be an iterable of parameter names, not a single string")
        decayed = frozenset(check_sequence(decayed, "decayed", of=str))
        unknown = sorted(decayed - set(self.names))
        if unknown:
            raise ValueError(f"decayed names parameters that do not exist: {unknown}")
        #: Names of the parameters the weight decay applies to (empty when the decay is zero).
        self.decayed = decayed if config.weight_decay > 0 else frozenset()
        arrays = [params[name] for name in self.names]
        self._flat = _shared_buffer(arrays)
        if self._flat is not None:
            self._m = np.zeros_like(self._flat)
            self._v = np.zeros_like(self._flat)
            self._g = np.empty_like(self._flat)
            self._tmp = np.empty_like(self._flat)
            offsets = np.cumsum([0] + [a.size for a in arrays])
            self._slices = [slice(int(a), int(b)) for a, b in zip(offsets[:-1], offsets[1:])]
            # 1 on the entries of decayed parameters, 0 elsewhere (None: nothing is decayed)
            self._decay_mask = None
            if self.decayed:
                self._decay_mask = np.zeros_like(self._flat)
                for name, where in zip(self.names, self._slices):
                    if name in self.decayed:
                        self._decay_mask[where] = 1.0
        else:
            self._m = {name: np.zeros_like(params[name]) for name in self.names}
            self._v = {name: np.zeros_like(params[name]) for name in self.names}
        self.t = 0

    @property
    def fused(self) -> bool:
        """Whether the parameters share one buffer (one vector update per step)."""
        return self._flat is not None

    def step(self, grads: dict, lr: float) -> None:
        """Apply one update with learning rate ``lr``.

        Parameters
        ----------
        grads : dict of str to ndarray
            Same names and shapes as the parameters.
        lr : float
            Learning rate for this step.

        Raises
        ------
        TypeError
            If ``grads`` is not a dict, a gradient is not a real array (ragged, complex,
            strings), or ``lr`` is not a real number.
        ValueError
            If ``grads`` has other names or shapes than the parameters or holds NaN or infinite
            values, or ``lr`` is negative or not finite; the parameters are left unchanged.
        """
        if not isinstance(grads, dict):
            raise TypeError(f"grads must be a dict of str to arrays, got {type(grads).__name__}")
        if set(grads) != set(self.names):
            raise ValueError("grads must have exactly the parameters' names")
        for name in self.names:
            grad = grads[name]
            if not isinstance(grad, np.ndarray):
                try:
                    grad = np.asarray(grad)
                except (TypeError, ValueError) as error:
                    raise TypeError(f"grads[{name!r}] must be a real array (not ragged), "
                                    f"got {type(grads[name]).__name__}") from error
            # O(1) per array: a complex gradient would lose its imaginary part in the copy below
            if grad.dtype.kind not in "fiu":
                raise TypeError(f"grads[{name!r}] must be a real array, got dtype {grad.dtype}")
            if grad.shape != self.params[name].shape:
                raise ValueError(f"grads[{name!r}] must have shape {self.params[name].shape}, got {grad.shape}")
        # a negative or NaN rate would ascend or poison every parameter; zero is a no-op step
        lr = check_real(lr, "lr", low=0.0)
        self.t += 1
        c = self.config
        step_size = lr / (1.0 - c.beta1 ** self.t)
        root_correction = 1.0 / math.sqrt(1.0 - c.beta2 ** self.t)
        shrink = lr * c.weight_decay
        if self._flat is not None:
            g = self._g
            for name, where in zip(self.names, self._slices):
                g[where] = np.reshape(grads[name], -1)
            # one summing pass (cheap next to the update) and an exact check only if it is not finite
            if not np.isfinite(g.sum()) and not np.all(np.isfinite(g)):
                self.t -= 1
                raise ValueError("grads must be finite (no NaN or infinity): the step would poison the parameters")
            if self._decay_mask is not None:  # decoupled decay: theta -= lr * lambda * theta on D
                np.multiply(self._flat, self._decay_mask, out=self._tmp)
                self._tmp *= shrink
                self._flat -= self._tmp
            self._update(self._flat, g, self._m, self._v, self._tmp, step_size, root_correction)
        else:
            for name in self.names:
                if not np.all(np.isfinite(grads[name])):
                    self.t -= 1
                    raise ValueError(f"grads[{name!r}] must be finite (no NaN or infinity)")
            for name in self.names:
                p = self.params[name]
                if name in self.decayed:
                    p *= 1.0 - shrink
                self._update(p, np.asarray(grads[name], dtype=p.dtype), self._m[name], self._v[name],
                             np.empty_like(p), step_size, root_correction)

    def _update(self, p, g, m, v, tmp, step_size, root_correction):
        c = self.config
        m *= c.beta1
        np.multiply(g, 1.0 - c.beta1, out=tmp)
        m += tmp
        v *= c.beta2
        np.multiply(g, g, out=tmp)
        tmp *= 1.0 - c.beta2
        v += tmp
        np.sqrt(v, out=tmp)
        tmp *= root_correction
        tmp += c.eps
        np.divide(m, tmp, out=tmp)
        tmp *= step_size
        p -= tmp
