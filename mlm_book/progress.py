"""Progress lines for long computations: shown in a terminal, never written into a page.

A chapter executed by the docs build runs in a Jupyter kernel, whose standard error ends up
in the rendered page. So a long computation does not print; it calls
[`report`][mlm_book.progress.report], which appends the line to the file named by the
environment variable ``MLM_BOOK_PROGRESS`` when it is set (the docs build sets it and copies
each line to its own log as it arrives), and otherwise prints to standard error only when
that is a terminal.

Examples
--------
>>> import os, tempfile
>>> with tempfile.TemporaryDirectory() as tmp:
...     path = os.path.join(tmp, "progress.log")
...     os.environ[ENVIRONMENT_VARIABLE] = path
...     report("training: step 10/100")
...     del os.environ[ENVIRONMENT_VARIABLE]
...     open(path).read()
'training: step 10/100\\n'
"""

from __future__ import annotations

import os
import sys

__all__ = ["ENVIRONMENT_VARIABLE", "enabled", "report"]

ENVIRONMENT_VARIABLE = "MLM_BOOK_PROGRESS"


def enabled() -> bool:
    """Whether [`report`][mlm_book.progress.report] would show a line anywhere.

    Examples
    --------
    >>> import os
    >>> from unittest import mock
    >>> with mock.patch.dict(os.environ, {ENVIRONMENT_VARIABLE: os.devnull}):
    ...     enabled()
    True
    """
    return bool(os.environ.get(ENVIRONMENT_VARIABLE)) or bool(getattr(sys.stderr, "isatty", lambda: False)())


def report(message: str) -> None:
    """Show one line of progress (see the module's description for where it goes).

    Parameters
    ----------
    message : str
        One line; a trailing newline is added.
    """
    if not isinstance(message, str):
        raise TypeError(f"message must be a string, got {type(message).__name__}")
    line = message.rstrip("\n") + "\n"
    target = os.environ.get(ENVIRONMENT_VARIABLE)
    if target:
        try:
            with open(target, "a", encoding="utf-8") as stream:
                stream.write(line)
        except OSError:
            pass  # progress is a courtesy: an unwritable log must not stop a computation
    elif getattr(sys.stderr, "isatty", lambda: False)():
        sys.stderr.write(line)
        sys.stderr.flush()
