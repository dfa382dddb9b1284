"""The test tiers, for every test and doctest of the repository.

* ``make check`` and ``make test`` run ``-m "not book"``: they test the package and build
  nothing book-sized. ``MLM_BOOK_BUILD_NOTHING`` is set for them, so a test that asks the
  default store for a trained model it does not hold fails at once
  ([`mlm_book.cache.NotInStoreError`][]), even with an empty store, instead of training.
* ``make test-book`` runs ``-m book``: the tests that read the book's trained artefacts or
  its built site, after ``mlm-book build`` has filled the store.

A doctest whose examples read a book-sized artefact says so in place, with the directive
``# doctest: +BOOK`` on its first such example: its docstring's test is then a ``book`` test.
"""

from __future__ import annotations

import doctest
import os

import pytest

BOOK = doctest.register_optionflag("BOOK")  # before any docstring is parsed


def _selects_book_tests_only_if_asked(markexpr: str) -> bool:
    return "not book" in markexpr


def pytest_configure(config) -> None:
    if _selects_book_tests_only_if_asked(config.option.markexpr or ""):
        os.environ["MLM_BOOK_BUILD_NOTHING"] = "1"  # inherited by xdist workers and process pools


def pytest_collection_modifyitems(session, config, items) -> None:
    for item in items:
        test = getattr(item, "dtest", None)
        if test is not None and any(example.options.get(BOOK) for example in test.examples):
            item.add_marker(pytest.mark.book)
