"""Bad input to the encoder's layers, the gradient check and the architecture drawing (issue 10).

The layers sit on the training hot path, so most of their finiteness checks read a reduction
the pass computes anyway (row variances, softmax row sums, bias gradients, the loss, the
block's output); these tests show each such check catches a NaN wherever it enters and names
the argument that holds it.
"""

from __future__ import annotations

import numpy as np
import pytest

from mlm_book.nn import encoder as enc
from mlm_book.nn import gradcheck, layers
from mlm_book.nn.diagram import figure_architecture

# the bad values below overflow or poison arithmetic on purpose, which NumPy reports as warnings
pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")

CFG = enc.EncoderConfig(vocab_size=6, length=5, d_model=8, n_blocks=2, n_heads=2, pad=True)
B, N = 3, CFG.length


@pytest.fixture
def params():
    rng = np.random.default_rng(0)
    p = enc.init_params(CFG, rng, dtype=np.float64)
    for value in p.values():
        value += rng.normal(0.0, 0.3, size=value.shape)
    return p


@pytest.fixture
def x():
    return np.random.default_rng(1).normal(size=(B * N, CFG.d_model))


def poisoned(array, value=np.nan):
    out = array.copy()
    out.flat[out.size // 2] = value
    return out


def raises_non_finite(name):
    """A NaN or infinity is a ValueError naming the argument and, as in training, a FloatingPointError."""
    return pytest.raises(FloatingPointError, match=name.replace("[", r"\[").replace("]", r"\]"))


# --------------------------------------------------------------------------- forward passes
@pytest.mark.parametrize("value", [np.nan, np.inf, -np.inf])
@pytest.mark.parametrize("argument", ["x", "gamma", "beta"])
def test_layer_norm_names_a_non_finite_argument(x, argument, value):
    arguments = {"x": x, "gamma": np.ones(8), "beta": np.zeros(8)}
    arguments[argument] = poisoned(arguments[argument], value)
    with raises_non_finite(argument):
        layers.layer_norm_forward(**arguments)


def test_layer_norm_refuses_a_constant_row_only_without_eps(x):
    x[2] = 1.5
    with pytest.raises(ValueError, match="x has a constant row.*eps"):
        layers.layer_norm_forward(x, np.ones(8), np.zeros(8), 0.0)
    y, _ = layers.layer_norm_forward(x, np.ones(8), np.zeros(8), 1e-5)
    assert np.all(y[2] == 0.0)
    with pytest.raises(ValueError, match="eps"):
        layers.layer_norm_forward(x, np.ones(8), np.zeros(8), -1.0)


@pytest.mark.parametrize("name", [f"blocks.0.{n}" for n in layers._BLOCK_PARAMS] + ["x", "key_bias"])
def test_block_forward_names_the_non_finite_array(params, x, name):
    # ln2 and the MLP parameters only reach the output, the others the variances or the scores:
    # every route must end in an error naming the array
    key_bias = layers.key_bias_from_valid(np.arange(B * N).reshape(B, N) % 4 != 3, np.float64)
    if name == "x":
        x = poisoned(x)
    elif name == "key_bias":
        key_bias = poisoned(key_bias)
    else:
        params[name] = poisoned(params[name])
    with raises_non_finite(name if name in ("x", "key_bias") else f"params['{name}']"):
        layers.block_forward(x, params, "blocks.0.", 2, (B, N), key_bias=key_bias)
    with raises_non_finite(name if name in ("x", "key_bias") else f"params['{name}']"):
        layers.block_forward(x, params, "blocks.0.", 2, (B, N), rows=np.array([0, 7, 14]), key_bias=key_bias)


def test_block_forward_refuses_missing_or_misshapen_parameters(params, x):
    with pytest.raises(ValueError, match="params has no 'blocks.9.ln1.g'.*prefix"):
        layers.block_forward(x, params, "blocks.9.", 2, (B, N))
    params["blocks.0.attn.W_o"] = params["blocks.0.attn.W_o"][:, :4]
    with pytest.raises(ValueError, match=r"params\['blocks.0.attn.W_o'\] must have shape \(8, 8\)"):
        layers.block_forward(x, params, "blocks.0.", 2, (B, N))
    with pytest.raises(TypeError, match="params must be a mapping"):
        layers.block_forward(x, list(params.values()), "blocks.0.", 2, (B, N))


def test_attention_refuses_scores_that_overflow(x):
    # finite arguments whose products overflow: the softmax's row sums turn NaN, which it checks anyway
    W = np.full((8, 24), 1e200)
    with pytest.raises(ValueError, match="attention scores are not finite"):
        layers.attention_forward(x, W, np.zeros(24), np.eye(8), np.zeros(8), 2, (B, N))


@pytest.mark.parametrize("rows, message", [
    (np.array([3, 1]), "strictly increasing"), (np.array([1, 1]), "strictly increasing"),
    (np.array([-1, 2]), r"\[0, B\*n = 15\)"), (np.array([2, 15]), r"\[0, B\*n = 15\)"),
    (np.array([0.5]), "rows must hold integers"), (np.array([[1, 2]]), "rows must have 1 dimension"),
])
def test_rows_must_be_increasing_positions_inside_the_batch(x, params, rows, message):
    W, b = params["blocks.0.attn.W_qkv"], params["blocks.0.attn.b_qkv"]
    with pytest.raises((ValueError, TypeError), match=message):
        layers.attention_forward(x, W, b, np.eye(8), np.zeros(8), 2, (B, N), rows=rows)
    with pytest.raises((ValueError, TypeError), match=message):
        layers.block_forward(x, params, "blocks.0.", 2, (B, N), rows=rows)


@pytest.mark.parametrize("n_heads, shape, message", [
    (3, (B, N), "n_heads must divide the width of x"), (0, (B, N), "n_heads"), (2.0, (B, N), "n_heads"),
    (2, (N, B + 1), r"shape \(5, 4\) has B\*n = 20 positions, but x has 15 rows"),
    (2, (10**12, 1), "shape"), (2, 15, "shape must be a pair"),
])
def test_heads_and_shape_must_fit_x(x, params, n_heads, shape, message):
    with pytest.raises((ValueError, TypeError), match=message):
        layers.block_forward(x, params, "blocks.0.", n_heads, shape)


def test_embedding_refuses_ids_outside_the_table_and_sequences_longer_than_P(params):
    E, P = params["E"], params["P"]
    with pytest.raises(ValueError, match=r"tokens must be ids of rows of E, in \[0, 8\)"):
        layers.embedding_forward(np.array([[0, 8]]), E, P)
    with pytest.raises(ValueError, match=r"tokens must be ids of rows of E.*from -1"):
        layers.embedding_forward(np.array([[-1, 2]]), E, P)        # would wrap silently to the last row
    with pytest.raises(ValueError, match="more than the 5 rows of P"):
        layers.embedding_forward(np.zeros((1, 6), dtype=int), E, P)
    with pytest.raises(TypeError, match="tokens must hold integers"):
        layers.embedding_forward(np.zeros((1, 2)), E, P)
    with raises_non_finite("E"):
        layers.embedding_forward(np.array([[0, 1]]), poisoned(E), P)


def test_head_and_cross_entropy(params, x):
    args = (params["ln_f.g"], params["ln_f.b"], params["E"][:6], params["b_out"])
    with raises_non_finite("E_out"):
        layers.head_forward(x, args[0], args[1], poisoned(args[2]), args[3])
    with pytest.raises(ValueError, match=r"b must have shape \(6,\)"):
        layers.head_forward(x, *args[:3], np.zeros(5))
    logits, _ = layers.head_forward(x, *args)
    targets = np.arange(B * N) % 6
    with raises_non_finite("logits"):
        layers.cross_entropy_forward(poisoned(logits, np.inf), targets)
    with pytest.raises(ValueError, match=r"targets must be ids in \[0, 6\)"):
        layers.cross_entropy_forward(logits, np.where(targets == 0, 6, targets))
    with pytest.raises(ValueError, match="targets must hold one id per row of logits"):
        layers.cross_entropy_forward(logits, targets[:-1])
    with pytest.raises(ValueError, match="logits must have at least one row"):
        layers.cross_entropy_forward(logits[:0], targets[:0])


def test_mlp_shapes_name_where_the_width_comes_from(x, params):
    W_1, b_1, W_2, b_2 = (params[f"blocks.0.mlp.{n}"] for n in ("W_1", "b_1", "W_2", "b_2"))
    with pytest.raises(ValueError, match=r"b_1 must have shape \(31,\) with k = W_1.shape\[1\]"):
        layers.mlp_forward(x, W_1[:, :31], b_1, W_2, b_2)
    with pytest.raises(TypeError, match="W_2 must be a float32 or float64 numpy array, got list"):
        layers.mlp_forward(x, W_1, b_1, W_2.tolist(), b_2)
    with pytest.raises(TypeError, match="x must be a float32 or float64 array, got dtype int64"):
        layers.mlp_forward(x.astype(int), W_1, b_1, W_2, b_2)
    with raises_non_finite("dy"):
        layers.mlp_backward_reference(poisoned(x), x, W_1, b_1, W_2, b_2)


# --------------------------------------------------------------------------- backward passes
def _forward_and_backward(params, x):
    """Every backward pass with its forward cache and an incoming gradient of the right shape."""
    rows = np.array([0, 4, 9, 14])
    y, c_block = layers.block_forward(x, params, "blocks.0.", 2, (B, N), rows=rows)
    _, c_ln = layers.layer_norm_forward(x, params["ln_f.g"], params["ln_f.b"])
    _, c_att = layers.attention_forward(x, params["blocks.0.attn.W_qkv"], params["blocks.0.attn.b_qkv"],
                                        params["blocks.0.attn.W_o"], params["blocks.0.attn.b_o"], 2, (B, N))
    _, c_mlp = layers.mlp_forward(x, params["blocks.0.mlp.W_1"], params["blocks.0.mlp.b_1"],
                                  params["blocks.0.mlp.W_2"], params["blocks.0.mlp.b_2"])
    z, c_head = layers.head_forward(x, params["ln_f.g"], params["ln_f.b"], params["E"][:6], params["b_out"])
    _, c_emb = layers.embedding_forward(np.arange(B * N).reshape(B, N) % 8, params["E"], params["P"])
    return [(layers.block_backward, y, c_block), (layers.layer_norm_backward, x, c_ln),
            (layers.attention_backward, x, c_att), (layers.mlp_backward, x, c_mlp),
            (layers.head_backward, z, c_head), (layers.embedding_backward, x, c_emb)]


def test_backward_passes_refuse_non_finite_or_misshapen_gradients_and_foreign_caches(params, x):
    for backward, grad, cache in _forward_and_backward(params, x):
        name = backward.__code__.co_varnames[0]                    # dy, dlogits or dx
        backward(grad, cache)
        with raises_non_finite(name):
            backward(poisoned(grad), cache)
        with pytest.raises(ValueError, match=f"{name} must have shape"):
            backward(grad[:, :-1], cache)
        with pytest.raises(TypeError, match="cache must be the tuple"):
            backward(grad, None)
        with pytest.raises(TypeError, match="cache must be the tuple"):
            backward(grad, list(cache))


# --------------------------------------------------------------------------- small functions
def test_key_bias_from_valid_dtype_and_shape():
    valid = np.array([[True, False, True]])
    assert layers.key_bias_from_valid(valid, np.float64).dtype == np.float64
    with pytest.raises(TypeError, match="dtype must be float32 or float64"):
        layers.key_bias_from_valid(valid, np.float16)              # -1e9 would round to -inf
    with pytest.raises(TypeError, match="dtype"):
        layers.key_bias_from_valid(valid, "text")
    with pytest.raises(TypeError, match="valid must be a 2-D boolean array"):
        layers.key_bias_from_valid([[True, False], [True]])
    with pytest.raises(ValueError, match="valid must keep at least one position"):
        layers.key_bias_from_valid(np.array([[False, False]]))


def test_gelu_takes_real_numbers_and_its_derivative_refuses_overflow():
    assert layers.gelu(2) == layers.gelu(2.0)
    # arrays keep float32 under every supported NumPy (a float32 scalar becomes float64 before NumPy 2's NEP 50)
    assert layers.gelu(np.array([1.0], dtype=np.float32)).dtype == np.float32
    with pytest.raises(ValueError, match="u must be finite"):
        layers.gelu(np.array([0.0, np.nan]))
    with pytest.raises(TypeError, match="u must hold real numbers"):
        layers.gelu(np.array([1j]))
    assert np.isfinite(layers.gelu(np.array([1e300, -1e300]))).all()
    with pytest.raises(ValueError, match=r"u must stay below 1.34e\+154"):
        layers.gelu_derivative(np.array([1e200]))
    with pytest.raises(ValueError, match=r"u must stay below 1.84e\+19"):
        layers.gelu_derivative(np.array([1e20], dtype=np.float32))


def test_valid_float32_calls_stay_float32(params, x):
    p32 = {k: v.astype(np.float32) for k, v in params.items()}
    y, _ = layers.block_forward(x.astype(np.float32), p32, "blocks.1.", 2, (B, N))
    assert y.dtype == np.float32


# --------------------------------------------------------------------------- gradient check and drawing
def test_relative_error():
    assert gradcheck.relative_error([1e308, -1e308], [-1e308, 1e308]) == 2.0   # the difference overflows
    assert gradcheck.relative_error([0.0], [0.0]) == 0.0
    with pytest.raises(ValueError, match="same shape"):
        gradcheck.relative_error(np.zeros(2), np.zeros(3))
    with pytest.raises(ValueError, match="not be empty"):
        gradcheck.relative_error([], [])
    with pytest.raises(ValueError, match="numeric must be finite"):
        gradcheck.relative_error([1.0], [np.nan])
    with pytest.raises(ValueError, match="floor"):
        gradcheck.relative_error([0.0], [0.0], floor=0.0)             # 0/0


def test_grad_check_result_fields():
    result = gradcheck.GradCheckResult(errors={"E": 1e-9, "x0": 2e-9}, max_error=2e-9, n_entries=10)
    assert result.max_error == 2e-9
    with pytest.raises(ValueError, match="max_error must be the largest of errors"):
        gradcheck.GradCheckResult(errors={"E": 1e-9}, max_error=1.0, n_entries=10)
    with pytest.raises(ValueError, match=r"errors\['E'\]"):
        gradcheck.GradCheckResult(errors={"E": float("nan")}, max_error=0.0, n_entries=10)
    with pytest.raises(TypeError, match="errors must be a dict"):
        gradcheck.GradCheckResult(errors=None, max_error=0.0, n_entries=10)
    with pytest.raises(ValueError, match="n_entries"):
        gradcheck.GradCheckResult(errors={}, max_error=0.0, n_entries=-1)


@pytest.mark.parametrize("kwargs, error, message", [
    ({"config": None}, TypeError, "config must be EncoderConfig"),
    ({"batch": 0}, ValueError, "batch"), ({"batch": 2.5}, TypeError, "batch"),
    ({"batch": 10**9}, ValueError, r"batch \* length = 3000000000 positions"),
    ({"length": 1}, ValueError, "length"), ({"length": 4}, ValueError, "length must be at most config.length = 3"),
    ({"h": 0.0}, ValueError, "h"), ({"h": 2.0}, ValueError, r"h must be a small .* step in \(0, 1\]"),
    ({"floor": -1.0}, ValueError, "floor"), ({"rng": 0}, TypeError, "rng"),
])
def test_gradient_check_arguments(kwargs, error, message):
    arguments = {"config": enc.EncoderConfig(vocab_size=4, length=3, d_model=4, n_blocks=1, n_heads=2),
                 "rng": np.random.default_rng(0), **kwargs}
    with pytest.raises(error, match=message):
        gradcheck.gradient_check(**arguments)


@pytest.mark.parametrize("slot", [2.0, 0j, np.array([2])])
def test_architecture_slot_must_be_an_integer(slot):
    with pytest.raises(TypeError, match="masked_position must be an integer"):
        figure_architecture(CFG, masked_position=slot)
