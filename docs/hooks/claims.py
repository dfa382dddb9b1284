"""MkDocs hook: the Claims page, generated at build time by ``mlm_book.ledger.verify``.

The page shows the same claims as ``mlm-book verify``: every registered claim recomputed
by the package during this build, with the reference text's value, the book's value, the
rule and the verdict. Each row carries its claim's id as an anchor, which the chapters'
claims summaries link to.

The claims are recomputed in a thread that starts when the files are collected, so that they
are judged while the chapters execute (each in its own kernel process); the page's text is put
in when mkdocs reaches the page, which it does after the chapters. A claim that fails is shown
as failing; with ``MLM_BOOK_CLAIMS_GATE=1`` (as ``make book`` sets it) it also fails the build
after the page is written, so one run both shows and verifies every claim.
"""

from __future__ import annotations

import logging
import os
import threading

import mkdocs.plugins
from mkdocs.exceptions import PluginError
from mkdocs.structure.files import File

from mlm_book import ledger

INTRO = """# Claims

Every number that the book's reference text states (see [Sources and
references](references.md)), recomputed by the package while this site was built. *reference*
is the reference text's value; *book* is what `mlm_book` computes here; *rule* is the
acceptance rule. The ids follow the reference text's sections, not the chapters; the *D*
ids after them are statements of the study notes that the reference text leaves out, and the
*Q* ids last are open questions that the book answers by experiment, both judged by rules the
book sets (their reference column is empty). Each chapter ends with a summary
of its own claims that links here. The same table prints with
`mlm-book verify`, which exits non-zero if any claim fails.

"""


def on_config(config):
    nav = config["nav"]
    nav.insert(len(nav) - 1, {"Claims": "claims.md"})
    return config


log = logging.getLogger("mkdocs.hooks.claims")
_state: dict = {}


def _judge() -> None:
    try:
        _state["results"] = ledger.verify()
    except BaseException as error:       # re-raised in the build's own thread
        _state["error"] = error


@mkdocs.plugins.event_priority(90)
def on_files(files, config):
    from mlm_book import artefacts

    # `make book` runs `mlm-book build` first; a site built alone builds what the store lacks here, in one pool.
    artefacts.build(artefacts.missing())
    _state.clear()
    worker = threading.Thread(target=_judge, name="claims", daemon=True)
    worker.start()
    _state["thread"] = worker
    files.append(File.generated(config, "claims.md", content="# Claims\n"))
    return files


def on_page_markdown(markdown, page, config, files):
    if page.file.src_uri != "claims.md" or "thread" not in _state:
        return markdown
    _state["thread"].join()
    if "error" in _state:
        raise _state["error"]
    results = _state["results"]
    counts = ledger.verdict_counts(results)
    judged = [result for result in results if not result.claim.reported]
    passed = sum(result.passed for result in judged)
    summary = (f"**{passed} of {len(judged)} claims pass.** A claim about a trained encoder is measured at every "
               f"training seed and its verdict says for how many its rule holds; a rule fixed before its numbers "
               f"and computed once holds or does not: **{counts['reproduced']}** are "
               f"reproduced (every seed, or the one computation), **{counts['seed-dependent']}** seed-dependent "
               f"(some seeds), **{counts['not reproduced']}** not reproduced (no seed, or the one computation); each "
               f"passes when that verdict is the one its chapter states. **{counts['single value']}** claims are "
               f"checked on a single value (exact results, counts, and learned results not yet measured over "
               f"seeds). **{counts['reported']}** more numbers are reported beside the published value with no "
               f"rule, marked *reported*, each with the reason it has none.\n\n")
    log.info("claims: %d of %d pass (%d reported values)", passed, len(judged), counts["reported"])
    return INTRO + summary + f'<div class="claims-table">{ledger.to_html(results)}</div>\n'


def on_post_build(config):
    results = _state.get("results")
    if results is None or os.environ.get("MLM_BOOK_CLAIMS_GATE") != "1":
        return
    failed = [result.claim.id for result in results if not result.passed]
    if failed:
        raise PluginError(f"{len(failed)} claims fail (see the Claims page, or `mlm-book verify`): {', '.join(failed)}")
