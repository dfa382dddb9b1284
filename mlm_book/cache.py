"""A content-addressed store for trained models and slow results.

An entry is a set of named NumPy arrays saved as ``<name>-<key>.npz`` next to a JSON
manifest ``<name>-<key>.json``. The key hashes three things: the entry's name, its
configuration (any JSON-serialisable mapping, canonically encoded) and the code that
produced it (its source without docstrings or comments), and the kernel family of the
loaded OpenBLAS (float32 training rounds differently on each; see
[`mlm_book.nn.runtime.blas_kernel`][mlm_book.nn.runtime.blas_kernel]). Editing that code,
or changing one hyper-parameter, gives a new key, so a stale result is never found; editing
its prose does not.

Nothing is trusted on the way back in. The manifest records the SHA-256 of the ``.npz``
bytes, the name, shape and dtype of every array, and the SHA-256 of its own metadata; a
load re-hashes and checks each of them. A truncated, edited or half-written entry fails
that check, is deleted and is rebuilt. Arrays are read with ``allow_pickle=False``: the
store never unpickles.

Several processes may ask for the same entry at once (the book trains seeds in parallel).
Each key has a lock file beside its entry (``fcntl.flock``, where the platform has it):
loading, building and storing happen under it, so an entry is computed once, by the first
process to ask, while the others wait and then load it; nobody ever sees, or deletes, a
half-written entry. A cache directory that cannot be written is not an error: the result
is computed, a warning says it was not stored, and it is returned.

The store lives in the user's cache directory (``$XDG_CACHE_HOME/mlm-book``, else
``~/.cache/mlm-book``), so every clone on a machine, and CI on the same machine, reuse what
was built: keys are content hashes, so a hit is the same computation. The environment
variable ``MLM_BOOK_CACHE`` points it elsewhere.

Every entry of the default store is something slow (a trained encoder, a seed sweep), built
by ``mlm-book build``. With ``MLM_BOOK_BUILD_NOTHING`` set, as the package's quick tests set
it, a miss in the default store raises [`NotInStoreError`][mlm_book.cache.NotInStoreError]
instead of building: a quick test that would train a book-sized model fails at once, even
with an empty store, rather than quietly training for minutes.
"""

from __future__ import annotations

import ast
import contextlib
import contextvars
import functools
import hashlib
import importlib
import importlib.util
import inspect
import io
import json
import os
import shutil
import tempfile
import textwrap
import time
import tokenize
import types
import warnings
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from mlm_book import progress
from mlm_book.nn import runtime
from mlm_book.validation import check_sequence

__all__ = ["CacheEntry", "NotInStoreError", "asking", "cache_dir", "cache_key", "entry_for", "load", "store", "cached", "source_of", "without_prose",
           "modules_reached"]

ENVIRONMENT_VARIABLE = "MLM_BOOK_CACHE"
BUILD_NOTHING_VARIABLE = "MLM_BOOK_BUILD_NOTHING"
_FORMAT_VERSION = 1


#: While ``asking()`` runs: the stems of the entries ``load`` was asked for (what a build reaches).
_ASKED: contextvars.ContextVar[set | None] = contextvars.ContextVar("mlm_book_cache_asked", default=None)


@contextlib.contextmanager
def asking():
    """Collect the stems (``<name>-<key>``) of every entry [`load`][mlm_book.cache.load] is asked for inside the block.

    ``mlm-book cache prune`` asks every declared artefact whether it is built, and so learns
    which entries the current code reaches.

    Examples
    --------
    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as tmp, asking() as asked:
    ...     _ = load(entry_for("demo", {"n": 1}, ["code"], directory=tmp))
    >>> [stem.split("-")[0] for stem in asked]
    ['demo']
    """
    asked: set[str] = set()
    token = _ASKED.set(asked)
    try:
        yield asked
    finally:
        _ASKED.reset(token)


class NotInStoreError(RuntimeError):
    """A slow result was asked of the default store, was missing, and building it is forbidden here.

    Examples
    --------
    >>> isinstance(NotInStoreError("hmm-encoder: not built"), RuntimeError)
    True
    """


def cache_dir() -> Path:
    """Directory of the store: ``$MLM_BOOK_CACHE``, else ``$XDG_CACHE_HOME/mlm-book``, else ``~/.cache/mlm-book``.

    Examples
    --------
    >>> import os
    >>> saved = os.environ.pop(ENVIRONMENT_VARIABLE, None)
    >>> cache_dir().name
    'mlm-book'
    >>> os.environ[ENVIRONMENT_VARIABLE] = "/tmp/elsewhere"
    >>> str(cache_dir())
    '/tmp/elsewhere'
    >>> _ = os.environ.pop(ENVIRONMENT_VARIABLE) if saved is None else os.environ.update({ENVIRONMENT_VARIABLE: saved})
    """
    override = os.environ.get(ENVIRONMENT_VARIABLE)
    if override:
        return Path(override).expanduser().resolve()
    # One store per user, not per clone: a second clone (or CI's) finds what the first built.
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg).expanduser() if xdg and Path(xdg).expanduser().is_absolute() else Path.home() / ".cache"
    return (base / "mlm-book").resolve()


def source_of(producers: Iterable[Callable | types.ModuleType | str]) -> str:
    r"""The code of functions, classes or modules, without docstrings or comments.

    Docstrings and comments are cut from each producer's source text, so a key changes
    when the code does and not when its prose does: a new doctest example or a
    reworded comment keeps every trained encoder. Strings pass through unchanged.

    Raises
    ------
    TypeError
        If ``producers`` is not a sequence (a single string included), or holds an object
        without source.

    Examples
    --------
    >>> "def source_of" in source_of([source_of])
    True
    >>> "Examples" in source_of([source_of])
    False
    >>> print(_code_without_prose("def f():\n    'prose'\n    return 1  # why"))
    def f():
        return 1
    """
    parts = []
    for producer in check_sequence(producers, "producers"):
        if isinstance(producer, str):
            parts.append(producer)
        else:
            try:
                source = inspect.getsource(producer)
            except (TypeError, OSError) as error:
                raise TypeError(f"producers must hold functions, classes, modules or strings with source, "
                                f"got {type(producer).__name__}: {error}") from error
            parts.append(_code_without_prose(source))
    return "\n".join(parts)


def modules_reached(module: types.ModuleType | str) -> tuple[types.ModuleType, ...]:
    """``module`` and every module of the package its import statements reach, followed in turn, sorted by name.

    ``module`` is a module of the package or its dotted name.

    The statements are read from the source (those inside functions too), not from what happens
    to be imported in the process, so the answer is the same in every process. As producers of
    a derived entry the whole set keys it: a change anywhere in the code that computes it makes
    a new entry without anyone keeping a list of the functions involved (coarser than needed: a
    change to an unrelated function of a reached module also makes a new entry).

    Raises
    ------
    TypeError
        If ``module`` is neither a module nor a string.
    ValueError
        If ``module`` names no module of the package.

    Examples
    --------
    >>> reached = modules_reached("mlm_book.ledger")
    >>> names = [m.__name__ for m in reached]
    >>> "mlm_book.ledger" in names, "mlm_book.validation" in names, names == sorted(names)
    (True, True, True)
    """
    def is_module(name: str) -> bool:
        try:
            return importlib.util.find_spec(name) is not None
        except (ImportError, ValueError):
            return False

    def imported(current: types.ModuleType) -> set[str]:
        package = current.__name__ if hasattr(current, "__path__") else current.__name__.rpartition(".")[0]
        names = set()
        for node in ast.walk(ast.parse(inspect.getsource(current))):
            if isinstance(node, ast.Import):
                names.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom):
                base = importlib.util.resolve_name("." * node.level + (node.module or ""), package) if node.level \
                    else node.module or ""
                names.add(base)
                names.update(f"{base}.{alias.name}" for alias in node.names if is_module(f"{base}.{alias.name}"))
        return {name for name in names if (name == "mlm_book" or name.startswith("mlm_book.")) and is_module(name)}

    if not isinstance(module, (types.ModuleType, str)):
        raise TypeError(f"module must be a module or its dotted name, got {type(module).__name__}")
    name = module.__name__ if isinstance(module, types.ModuleType) else module
    if not (name == "mlm_book" or name.startswith("mlm_book.")) or not is_module(name):
        raise ValueError(f"module must be a module of the package (mlm_book...), got {name!r:.80}")
    found: dict[str, types.ModuleType] = {}
    stack = [name]
    while stack:
        name = stack.pop()
        if name in found:
            continue
        found[name] = importlib.import_module(name)
        stack.extend(imported(found[name]) - set(found))
    return tuple(found[name] for name in sorted(found))


def without_prose(source: str) -> str:
    """``source`` (Python code) without its docstrings and comments: the text a key hashes.

    Examples
    --------
    >>> print(without_prose("x = 1  # why"))
    x = 1
    >>> print(without_prose("SEEDS = (1, 2)" + chr(10) + "'The seeds the book reports.'"))
    SEEDS = (1, 2)
    """
    if not isinstance(source, str):
        raise TypeError(f"source must be Python source text (str), got {type(source).__name__}")
    try:
        return _code_without_prose(source)
    except (SyntaxError, ValueError) as error:  # ValueError: a null byte, before Python 3.12
        raise ValueError(f"source must be Python source text that parses, got {source[:40]!r}: {error}") from None


@functools.lru_cache(maxsize=1024)  # a pure function of the text; every key of a build re-reads the same modules
def _code_without_prose(source: str) -> str:
    # Cut by position from the text itself: ast.unparse would re-render the code, and it
    # renders f-strings differently across Python versions (so keys would too).
    source = textwrap.dedent(source)
    lines = source.splitlines()
    dropped: set[int] = set()
    # Every bare string statement is prose: a docstring, or the string under an attribute or
    # a module constant that documents it; none of them changes what the code computes.
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) \
                and isinstance(node.value.value, str) and _alone_on_its_lines(node, lines):
            dropped.update(range(node.lineno, node.end_lineno + 1))
    ends = {row: column for kind, _, (row, column), _, _ in tokenize.generate_tokens(io.StringIO(source).readline)
            if kind == tokenize.COMMENT}
    kept = (line[:ends.get(number, len(line))].rstrip() for number, line in enumerate(lines, 1)
            if number not in dropped)
    return "\n".join(line for line in kept if line)


def _alone_on_its_lines(node: ast.stmt, lines: list[str]) -> bool:
    # ast's column offsets count UTF-8 bytes, not characters.
    before = lines[node.lineno - 1].encode()[:node.col_offset].decode()
    after = lines[node.end_lineno - 1].encode()[node.end_col_offset:].decode()
    return not before.strip() and (not after.strip() or after.strip().startswith("#"))


def _canonical_json(config: Mapping) -> str:
    try:
        return json.dumps(config, sort_keys=True, separators=(",", ":"), allow_nan=False)
    except (TypeError, ValueError) as error:
        raise TypeError(f"config must be a JSON-serialisable mapping of finite values: {error}") from error


def cache_key(name: str, config: Mapping, producers: Iterable[Callable | types.ModuleType | str]) -> str:
    """Hex SHA-256 over the entry name, its canonical config and its producers' source.

    Raises
    ------
    TypeError
        If ``config`` is not a mapping or ``producers`` is not a sequence of producers
        (see [`source_of`][mlm_book.cache.source_of]).
    ValueError
        If ``name`` is empty or holds a slash or a space.

    Examples
    --------
    >>> a = cache_key("demo", {"steps": 3}, ["def f(): pass"])
    >>> b = cache_key("demo", {"steps": 4}, ["def f(): pass"])
    >>> c = cache_key("demo", {"steps": 3}, ["def f(): return 1"])
    >>> len({a, b, c})
    3
    """
    if not isinstance(name, str) or not name or any(ch in name for ch in "/\\ "):
        raise ValueError(f"name must be a non-empty string without slashes or spaces, got {name!r}")
    if not isinstance(config, Mapping):
        raise TypeError(f"config must be a mapping, got {type(config).__name__}")
    digest = hashlib.sha256()
    # float32 training rounds differently from one BLAS kernel family to another: a hit must be the same computation
    digest.update(f"mlm-book-cache-v{_FORMAT_VERSION}\0{runtime.blas_kernel()}\0{name}\0".encode())
    digest.update(_canonical_json(config).encode())
    digest.update(b"\0")
    digest.update(source_of(producers).encode())
    return digest.hexdigest()


@dataclass(frozen=True)
class CacheEntry:
    """Where an entry lives: its ``.npz`` arrays and its ``.json`` manifest.

    Examples
    --------
    >>> entry = CacheEntry("demo", "0123abcd", Path("/tmp/store"))
    >>> entry.stem, entry.arrays_path.name
    ('demo-0123abcd', 'demo-0123abcd.npz')
    """

    name: str
    key: str
    directory: Path

    def __post_init__(self):
        if not isinstance(self.name, str):
            raise TypeError(f"name must be a string, got {type(self.name).__name__}")
        if not self.name or any(ch in self.name for ch in "/\\ "):
            raise ValueError(f"name must be a non-empty string without slashes or spaces, got {self.name!r}")
        if not isinstance(self.key, str):
            raise TypeError(f"key must be a string (a cache_key), got {type(self.key).__name__}")
        if not self.key or any(ch not in "0123456789abcdef" for ch in self.key):
            raise ValueError(f"key must be a lower-case hex digest (a cache_key), got {self.key!r}")
        if not isinstance(self.directory, Path):
            raise TypeError(f"directory must be a pathlib.Path, got {type(self.directory).__name__}")

    @property
    def stem(self) -> str:
        return f"{self.name}-{self.key[:20]}"

    @property
    def arrays_path(self) -> Path:
        return self.directory / f"{self.stem}.npz"

    @property
    def manifest_path(self) -> Path:
        return self.directory / f"{self.stem}.json"

    @property
    def lock_path(self) -> Path:
        return self.directory / f".{self.stem}.lock"


def _sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _atomic_write(path: Path, write: Callable) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(handle, "wb") as stream:
            write(stream)
        os.chmod(temporary, 0o644)  # mkstemp makes owner-only files; entries are ordinary data
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def _remove(path: Path) -> None:
    """Delete a file, or whatever else sits where a file of the entry should be."""
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        with contextlib.suppress(OSError):
            path.unlink(missing_ok=True)


def _metadata_digest(metadata: Mapping) -> str:
    return hashlib.sha256(json.dumps(metadata, sort_keys=True, allow_nan=False).encode()).hexdigest()


@contextlib.contextmanager
def _locked(entry: CacheEntry):
    """Hold the entry's lock (exclusive) for the block; yields False when it cannot be taken.

    Without a writable directory or without ``fcntl`` the block runs unlocked (and the caller
    will find it cannot store either).
    """
    try:
        import fcntl
    except ImportError:  # not POSIX: no cross-process lock, the atomic renames still hold
        yield True
        return
    try:
        entry.directory.mkdir(parents=True, exist_ok=True)
        handle = open(entry.lock_path, "a")
    except OSError:
        yield False
        return
    with handle:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
        try:
            yield True
        finally:
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)


def _clean_temporaries(entry: CacheEntry) -> None:
    """Remove the temporary files that a writer of this entry left when it was killed."""
    for leftover in entry.directory.glob(f".{entry.stem}.*.tmp"):
        _remove(leftover)


def _check_entry(entry) -> None:
    if not isinstance(entry, CacheEntry):
        raise TypeError(f"entry must be a CacheEntry, got {type(entry).__name__}")


def store(entry: CacheEntry, arrays: Mapping[str, np.ndarray], metadata: Mapping | None = None) -> None:
    """Write ``arrays`` (and JSON ``metadata``) under ``entry``; the manifest is written last.

    Object arrays are refused because they would need pickle to read back. Call it under
    the entry's lock (as [`cached`][mlm_book.cache.cached] does) when other processes may
    read the same entry.

    Examples
    --------
    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     store(CacheEntry("demo", "0123abcd", Path(tmp)), {"w": np.arange(2.0)}, {"steps": 3})
    ...     arrays, metadata = load(CacheEntry("demo", "0123abcd", Path(tmp)))
    >>> arrays["w"].tolist(), metadata
    ([0.0, 1.0], {'steps': 3})
    """
    _check_entry(entry)
    if metadata is not None and not isinstance(metadata, Mapping):
        raise TypeError(f"metadata must be a mapping (JSON object) or None, got {type(metadata).__name__}")
    if not isinstance(arrays, Mapping) or not arrays:
        raise ValueError("arrays must be a non-empty mapping of names to arrays")
    clean = {}
    for key, value in arrays.items():
        array = np.asarray(value)
        if array.dtype == object:
            raise TypeError(f"arrays[{key!r}] has dtype object, which cannot be stored without pickle")
        clean[str(key)] = array
    _atomic_write(entry.arrays_path, lambda stream: np.savez(stream, **clean))
    manifest = {
        "format": _FORMAT_VERSION,
        "name": entry.name,
        "key": entry.key,
        "sha256": _sha256_file(entry.arrays_path),
        "arrays": {key: {"shape": list(a.shape), "dtype": a.dtype.str} for key, a in clean.items()},
        "metadata": dict(metadata or {}),
        "metadata_sha256": _metadata_digest(dict(metadata or {})),
    }
    text = json.dumps(manifest, indent=1, sort_keys=True, allow_nan=False)
    _atomic_write(entry.manifest_path, lambda stream: stream.write(text.encode()))


def load(entry: CacheEntry) -> tuple[dict[str, np.ndarray], dict] | None:
    """Return ``(arrays, metadata)`` if the entry exists and passes every check, else ``None``.

    A present but damaged entry (bad JSON, wrong key, hash mismatch, missing or reshaped
    array, unreadable file) is deleted so that it is rebuilt. The entry's lock is held
    meanwhile, so an entry that another process is still writing is waited for, not deleted.

    Examples
    --------
    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     print(load(CacheEntry("demo", "0123abcd", Path(tmp))))
    None
    """
    _check_entry(entry)
    asked = _ASKED.get()
    if asked is not None:
        asked.add(entry.stem)
    with _locked(entry):
        return _load(entry)


def _load(entry: CacheEntry) -> tuple[dict[str, np.ndarray], dict] | None:
    if not entry.manifest_path.exists() and not entry.arrays_path.exists():
        return None
    try:
        manifest = json.loads(entry.manifest_path.read_text())
        if not isinstance(manifest, dict):
            raise ValueError("manifest is not a JSON object")
        if manifest.get("format") != _FORMAT_VERSION or manifest.get("key") != entry.key:
            raise ValueError("manifest does not match the entry")
        metadata = manifest.get("metadata")
        if not isinstance(metadata, dict) or manifest.get("metadata_sha256") != _metadata_digest(metadata):
            raise ValueError("metadata differs from its recorded hash")
        if _sha256_file(entry.arrays_path) != manifest["sha256"]:
            raise ValueError("array file hash differs from the manifest")
        arrays = {}
        with np.load(entry.arrays_path, allow_pickle=False) as archive:
            if sorted(archive.files) != sorted(manifest["arrays"]):
                raise ValueError("array names differ from the manifest")
            for key, spec in manifest["arrays"].items():
                array = archive[key]
                if list(array.shape) != spec["shape"] or array.dtype.str != spec["dtype"]:
                    raise ValueError(f"array {key!r} differs from the manifest")
                arrays[key] = array
        return arrays, metadata
    except (OSError, ValueError, KeyError, TypeError, AttributeError, json.JSONDecodeError):
        _remove(entry.manifest_path)
        _remove(entry.arrays_path)
        return None


def entry_for(name: str, config: Mapping, producers: Iterable[Callable | types.ModuleType | str],
              directory: Path | str | None = None) -> CacheEntry:
    """The entry [`cached`][mlm_book.cache.cached] reads and writes for ``(name, config, producers)``: ask
    [`load`][mlm_book.cache.load] of it whether a result is there without building one.

    Examples
    --------
    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     before = load(entry_for("demo", {"n": 3}, ["code"], directory=tmp))
    ...     _ = cached("demo", {"n": 3}, ["code"], lambda: {"w": np.zeros(2)}, directory=tmp)
    ...     after = load(entry_for("demo", {"n": 3}, ["code"], directory=tmp))
    >>> before is None, after[0]["w"].tolist()
    (True, [0.0, 0.0])
    """
    if directory is not None and not isinstance(directory, (str, os.PathLike)):
        raise TypeError(f"directory must be a path (str or os.PathLike) or None, got {type(directory).__name__}")
    directory = Path(directory) if directory is not None else cache_dir()
    return CacheEntry(name, cache_key(name, config, producers), directory)


def cached(name: str, config: Mapping, producers: Iterable[Callable | types.ModuleType | str],
           build: Callable[[], Mapping[str, np.ndarray] | tuple[Mapping[str, np.ndarray], Mapping]],
           *, directory: Path | str | None = None, book_sized: bool = True) -> tuple[dict[str, np.ndarray], dict]:
    """Load the entry for ``(name, config, producers)`` or build, store and return it.

    ``build`` returns a mapping of arrays, or a pair ``(arrays, metadata)`` with JSON
    metadata (for example a loss curve's summary or the wall time). ``book_sized=False``
    says that building the entry takes seconds (an exact sweep, not a training), so the
    quick tests may build it even under ``MLM_BOOK_BUILD_NOTHING``.

    Examples
    --------
    >>> import tempfile
    >>> calls = []
    >>> def build():
    ...     calls.append(1)
    ...     return {"w": np.arange(3.0)}
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     first, _ = cached("demo", {"n": 3}, [build], build, directory=tmp)
    ...     second, _ = cached("demo", {"n": 3}, [build], build, directory=tmp)
    >>> len(calls), second["w"].tolist()
    (1, [0.0, 1.0, 2.0])
    """
    if not isinstance(book_sized, bool):
        raise TypeError(f"book_sized must be a bool, got {type(book_sized).__name__}")
    entry = entry_for(name, config, producers, directory)
    directory = entry.directory
    default_store = Path(directory).resolve() == cache_dir()
    with _locked(entry) as writable:
        found = _load(entry)
        if found is not None:
            return found
        if book_sized and default_store and os.environ.get(BUILD_NOTHING_VARIABLE):
            raise NotInStoreError(
                f"{name} is not in the store {directory} and {BUILD_NOTHING_VARIABLE} forbids building it here "
                "(the quick tests build nothing book-sized): run `mlm-book build`, or mark the test that reads "
                "it `slow`")
        progress.report(f"computing {name} (not in the cache {directory}) ...")
        start = time.perf_counter()
        result = build()
        progress.report(f"computed {name} in {time.perf_counter() - start:.1f} s")
        arrays, metadata = result if isinstance(result, tuple) else (result, {})
        if writable:
            _clean_temporaries(entry)
            try:
                store(entry, arrays, metadata)
            except PermissionError as error:
                writable = False
                warnings.warn(f"cache entry {entry.stem} was computed but not stored ({error}); it will be "
                              "computed again next time", RuntimeWarning, stacklevel=2)
        else:
            warnings.warn(f"cache directory {directory} cannot be written: {entry.stem} was computed but not "
                          "stored; it will be computed again next time", RuntimeWarning, stacklevel=2)
        if not writable:
            return {str(k): np.asarray(v) for k, v in arrays.items()}, dict(metadata)
        reloaded = _load(entry)
    if reloaded is None:
        raise RuntimeError(f"cache entry {entry.stem} failed its check right after being written")
    return reloaded
