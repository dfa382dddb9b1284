r"""Document-internal windows of the filings, and the two ways to read a token from them.

**Centred reading** ([`centred_windows`][mlm_book.finance.windows.centred_windows], how every finance number of the book is
measured). Token $i$ of a filing is read at position ``length // 2`` (16 of 32, 0-based) of
its *own* window, which holds the ``length // 2`` tokens before it and the
``length - length // 2 - 1`` tokens after it. Windows never cross a filing's edge: slots
before the first or after the last token of the filing hold ``pad_id`` and are marked
invalid in the returned mask, so an encoder must mask them as keys. The token is therefore
always at the same position, and an encoder's layer 0, $E[x] + P_{16}$, is the same vector for
every occurrence of a word. A filing shorter than the window is allowed: the window is then
mostly padding.

**Nearest-centre reading** ([`fixed_windows`][mlm_book.finance.windows.fixed_windows] then [`nearest_centre`][mlm_book.finance.windows.nearest_centre]). Each filing
is cut into fixed windows starting at ``0, stride, 2 stride, ...`` while they fit, plus one
last window that ends exactly at the filing's end if the regular ones do not reach it. A
token lies in one or more windows; it is read in the one where its position is nearest the
centre ``(length - 1) / 2`` (ties go to the earlier window). Tokens near a filing's edges
can then only sit near a window's edge, so a position-only layer 0 learns *where in the
filing* a token is: the position leak. A filing shorter than the window cannot hold a fixed
window and raises `ValueError`.

Examples
--------
>>> import numpy as np
>>> document = np.array([0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1])
>>> ids = np.arange(11)
>>> windows, valid = centred_windows(ids, document, length=4, pad_id=-1)
>>> windows[0].tolist(), windows[6].tolist()
([-1, -1, 0, 1], [-1, 5, 6, 7])
>>> starts = fixed_windows(document, length=4, stride=2)
>>> starts.tolist()
[0, 1, 5, 7]
"""

from __future__ import annotations

import numpy as np

from mlm_book.validation import as_int_array, check_positive_int

__all__ = ["centre_position", "centred_windows", "fixed_windows", "gather_windows", "nearest_centre"]

#: Most window slots one call may build (each slot takes an id, a flag and intermediates:
#: ~1 GB at this size, against ~2 * 10^6 slots for the book's corpus).
MAX_SLOTS = 5 * 10**7


def _document_array(document) -> np.ndarray:
    array = as_int_array(document, "document", ndim=1)
    if array.size == 0:
        raise ValueError("document must not be empty")
    if np.any(np.diff(array) < 0):
        raise ValueError("document must be non-decreasing (filings stored one after another)")
    return array


def _bounds(document: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per token: the stream index of its filing's first token and one past its last."""
    change = np.flatnonzero(np.diff(document)) + 1
    starts = np.concatenate([[0], change])
    stops = np.concatenate([change, [document.size]])
    run = np.repeat(np.arange(starts.size), stops - starts)
    return starts[run], stops[run]


def centre_position(length: int) -> int:
    """The 0-based position a centred token occupies: ``length // 2`` (16 for 32).

    Examples
    --------
    >>> centre_position(32)
    16
    """
    return check_positive_int(length, "length", minimum=2) // 2


def centred_windows(ids, document, *, length: int = 32, pad_id: int, select=None):
    r"""Every (or every selected) token at the centre of its own document-internal window.

    Parameters
    ----------
    ids : array_like of int, shape (n,)
        Token ids of the whole stream.
    document : array_like of int, shape (n,)
        Filing index of each token, non-decreasing.
    length : int
        Window length (at least 2); the token sits at [`centre_position`][mlm_book.finance.windows.centre_position].
    pad_id : int
        Id written into slots outside the token's filing: the input-only [PAD],
        [`mlm_book.finance.vocab.Vocabulary.pad_id`][mlm_book.finance.vocab.Vocabulary.pad_id].
    select : array_like of int, shape (m,), optional
        Stream indices of the tokens to read; all tokens by default.

    Returns
    -------
    windows : numpy.ndarray of int, shape (m, length)
    valid : numpy.ndarray of bool, shape (m, length)
        False on padded slots.

    Raises
    ------
    TypeError
        If ``ids``, ``document``, ``select`` or ``pad_id`` does not hold integers.
    ValueError
        If ``document`` is empty or decreasing, ``ids`` and ``document`` differ in shape,
        ``length`` is below 2, ``select`` is out of range, or the windows would have more
        than ``MAX_SLOTS`` slots.

    Examples
    --------
    >>> import numpy as np
    >>> w, v = centred_windows(np.arange(5), np.zeros(5, int), length=4, pad_id=9, select=[4])
    >>> w.tolist(), v.tolist()
    ([[2, 3, 4, 9]], [[True, True, True, False]])
    """
    ids = as_int_array(ids, "ids", ndim=1)
    document = _document_array(document)
    if ids.shape != document.shape:
        raise ValueError(f"ids and document must have the same shape, got {ids.shape} and {document.shape}")
    centre = centre_position(length)
    if isinstance(pad_id, bool) or not isinstance(pad_id, (int, np.integer)):
        raise TypeError(f"pad_id must be an integer, got {type(pad_id).__name__}")
    index = np.arange(ids.size) if select is None else as_int_array(select, "select", ndim=1)
    if index.size and (index.min() < 0 or index.max() >= ids.size):
        raise ValueError(f"select must hold stream indices in [0, {ids.size})")
    if max(index.size, 1) * length > MAX_SLOTS:
        raise ValueError(f"length = {length} for {index.size} windows is {max(index.size, 1) * length} slots, "
                         f"more than the limit {MAX_SLOTS}")
    first, stop = _bounds(document)
    source = index[:, None] + (np.arange(length) - centre)[None, :]
    valid = (source >= first[index][:, None]) & (source < stop[index][:, None])
    windows = np.where(valid, ids[np.clip(source, 0, ids.size - 1)], int(pad_id))
    return windows, valid


def fixed_windows(document, *, length: int = 32, stride: int = 16) -> np.ndarray:
    """Stream start indices of the fixed document-internal windows, shape ``(n_windows,)``.

    Per filing: starts ``0, stride, 2*stride, ...`` (relative to the filing) while the window
    fits, then one window ending at the filing's end if those do not reach it.

    Parameters
    ----------
    document : array_like of int, shape (n,)
        Filing index of each token, non-decreasing.
    length : int
        Window length.
    stride : int
        Step between window starts, between 1 and ``length`` (no gaps).

    Raises
    ------
    ValueError
        If a filing is shorter than ``length`` (no window fits inside it), or ``stride`` is
        outside ``[1, length]``.

    Examples
    --------
    >>> fixed_windows([0] * 7, length=4, stride=4).tolist()
    [0, 3]
    >>> fixed_windows([0, 0, 1], length=4, stride=2)
    Traceback (most recent call last):
    ...
    ValueError: every filing of document must have at least length = 4 tokens for a fixed window; the shortest has 1
    """
    document = _document_array(document)
    check_positive_int(length, "length", minimum=2)
    check_positive_int(stride, "stride")
    if stride > length:
        raise ValueError(f"stride must be at most length = {length} (windows must cover every token), got {stride}")
    change = np.flatnonzero(np.diff(document)) + 1
    starts = np.concatenate([[0], change])
    sizes = np.diff(np.concatenate([starts, [document.size]]))
    if sizes.min() < length:
        raise ValueError(f"every filing of document must have at least length = {length} tokens for a fixed window; "
                         f"the shortest has {int(sizes.min())}")
    regular = (sizes - length) // stride + 1                      # windows that fit at k * stride
    covered = (regular - 1) * stride + length                     # tokens they cover
    extra = (covered < sizes).astype(np.int64)                    # a last window flush with the end
    counts = regular + extra
    owner = np.repeat(np.arange(starts.size), counts)
    k = np.arange(counts.sum()) - np.repeat(np.cumsum(counts) - counts, counts)
    relative = np.where(k < regular[owner], k * stride, sizes[owner] - length)
    return starts[owner] + relative


def gather_windows(ids, window_starts, *, length: int = 32) -> np.ndarray:
    """The token ids of fixed windows, shape ``(n_windows, length)`` (e.g. an encoder's training windows).

    Parameters
    ----------
    ids : array_like of int, shape (n,)
        Token ids of the stream.
    window_starts : array_like of int, shape (w,)
        From [`fixed_windows`][mlm_book.finance.windows.fixed_windows] with the same ``length``.
    length : int
        Window length.

    Raises
    ------
    TypeError
        If ``ids`` or ``window_starts`` does not hold integers, or ``length`` is not an integer.
    ValueError
        If ``length`` is below 1 or a window does not lie inside ``ids``.

    Examples
    --------
    >>> gather_windows([5, 6, 7, 8, 9], [0, 2], length=3).tolist()
    [[5, 6, 7], [7, 8, 9]]
    """
    ids = as_int_array(ids, "ids", ndim=1)
    starts = as_int_array(window_starts, "window_starts", ndim=1)
    check_positive_int(length, "length")
    if starts.size and (starts.min() < 0 or starts.max() + length > ids.size):
        raise ValueError(f"window_starts must index windows of length {length} inside ids ({ids.size} tokens)")
    return ids[starts[:, None] + np.arange(length)[None, :]]


def nearest_centre(document, window_starts, *, length: int = 32):
    r"""For each token, the window (of ``window_starts``) where it sits nearest the centre.

    Parameters
    ----------
    document : array_like of int, shape (n,)
        Filing index of each token.
    window_starts : array_like of int, shape (w,)
        From [`fixed_windows`][mlm_book.finance.windows.fixed_windows] with the same ``length``.
    length : int
        Window length.

    Returns
    -------
    window : numpy.ndarray of int, shape (n,)
        Index into ``window_starts``.
    position : numpy.ndarray of int, shape (n,)
        The token's position inside that window, in ``[0, length)``.

    Raises
    ------
    TypeError
        If ``document`` or ``window_starts`` does not hold integers, or ``length`` is not an integer.
    ValueError
        If ``document`` is empty or decreasing, ``length`` is below 2, ``window_starts`` is
        empty, decreasing or indexes a window outside ``document`` or across two filings, or
        the windows do not cover every token.

    Examples
    --------
    >>> import numpy as np
    >>> doc = np.zeros(7, int)
    >>> starts = fixed_windows(doc, length=4, stride=2)
    >>> window, position = nearest_centre(doc, starts, length=4)
    >>> starts.tolist(), window.tolist(), position.tolist()
    ([0, 2, 3], [0, 0, 0, 1, 1, 2, 2], [0, 1, 2, 1, 2, 2, 3])
    """
    document = _document_array(document)
    starts = as_int_array(window_starts, "window_starts", ndim=1)
    check_positive_int(length, "length", minimum=2)
    if starts.size == 0 or np.any(np.diff(starts) < 0):
        raise ValueError("window_starts must be a non-empty non-decreasing array")
    if starts.min() < 0 or starts.max() + length > document.size:
        raise ValueError(f"window_starts must index windows of length = {length} inside document "
                         f"({document.size} tokens)")
    if np.any(document[starts] != document[starts + length - 1]):
        raise ValueError("every window of window_starts must lie inside one filing of document")
    token = np.arange(document.size)
    last = np.searchsorted(starts, token, side="right") - 1       # last window starting at or before
    best = np.full(token.size, -1)
    best_distance = np.full(token.size, np.inf)
    centre = (length - 1) / 2
    max_overlap = int(np.max(np.searchsorted(starts, starts + length, side="left") - np.arange(starts.size)))
    for back in range(max_overlap, -1, -1):                      # earlier windows first: they win ties
        candidate = last - back
        ok = candidate >= 0
        start = starts[np.clip(candidate, 0, None)]
        ok &= (token >= start) & (token < start + length) & (document[np.clip(start, 0, None)] == document)
        distance = np.where(ok, np.abs(token - start - centre), np.inf)
        better = distance < best_distance
        best = np.where(better, candidate, best)
        best_distance = np.where(better, distance, best_distance)
    if np.any(best < 0):
        raise ValueError("window_starts do not cover every token")
    return best, token - starts[best]
