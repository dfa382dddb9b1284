"""MkDocs hook: the Claims page, generated at build time by ``mlm_book.ledger.verify``.

The page shows the same claims as ``mlm-book verify``: every registered claim recomputed
by the package during this build, with the reference text's value, the book's value, the
rule and the verdict. Each row carries its claim's id as an anchor, which the chapters'
claims summaries link to.

The claims are recomputed in a process of their own that starts when the files are collected,
so that they are judged while the chapters execute and the pages render (a thread of this
process would share its interpreter lock with the rendering); the page's text is put in when
mkdocs reaches the page, which it does after the chapters. A claim that fails is shown
as failing; with ``MLM_BOOK_CLAIMS_GATE=1`` (as ``make book`` sets it) it also fails the build
after the page is written, so one run both shows and verifies every claim.
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import time

import mkdocs.plugins
from mkdocs.exceptions import PluginError
from mkdocs.structure.files import File

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


# Run in a process of its own: every claim judged, printed as the page's table and counts (JSON).
JUDGE = """
import json
from mlm_book import ledger
results = ledger.verify()
judged = [result for result in results if not result.claim.reported]
print(json.dumps({"table": ledger.to_html(results), "counts": ledger.verdict_counts(results),
                  "passed": sum(result.passed for result in judged), "judged": len(judged),
                  "failed": [result.claim.id for result in results if not result.passed]}))
"""


def _judged() -> dict:
    """The judging process's result (waiting for it); a failure of the process fails the build."""
    if "judged" not in _state:
        process, start = _state["process"], _state["start"]
        output, errors = process.communicate()
        if process.returncode != 0:
            raise PluginError(f"judging the claims failed (exit {process.returncode}):\n{errors[-6000:]}")
        _state["judged"] = json.loads(output.strip().splitlines()[-1])  # anything printed before it is not ours
        log.info("claims judged in %.0f s, in a process beside the build", time.perf_counter() - start)
    return _state["judged"]


@mkdocs.plugins.event_priority(90)
def on_files(files, config):
    from mlm_book import artefacts

    # `make book` runs `mlm-book build` first; a site built alone builds what the store lacks here, in one pool.
    artefacts.build(artefacts.missing())
    _state.clear()
    _state["start"] = time.perf_counter()
    _state["process"] = subprocess.Popen([sys.executable, "-c", JUDGE], stdout=subprocess.PIPE,
                                         stderr=subprocess.PIPE, text=True)
    files.append(File.generated(config, "claims.md", content="# Claims\n"))
    return files


def on_page_markdown(markdown, page, config, files):
    if page.file.src_uri != "claims.md" or "process" not in _state:
        return markdown
    judged = _judged()
    counts, passed = judged["counts"], judged["passed"]
    summary = (f"**{passed} of {judged['judged']} claims pass.** A claim about a trained encoder is measured at every "
               f"training seed and its verdict says for how many its rule holds; a rule fixed before its numbers "
               f"and computed once holds or does not: **{counts['reproduced']}** are "
               f"reproduced (every seed, or the one computation), **{counts['seed-dependent']}** seed-dependent "
               f"(some seeds), **{counts['not reproduced']}** not reproduced (no seed, or the one computation); each "
               f"passes when that verdict is the one its chapter states. **{counts['single value']}** claims are "
               f"checked on a single value (exact results, counts, and learned results not yet measured over "
               f"seeds). **{counts['reported']}** more numbers are reported beside the published value with no "
               f"rule, marked *reported*, each with the reason it has none.\n\n")
    log.info("claims: %d of %d pass (%d reported values)", passed, judged["judged"], counts["reported"])
    return INTRO + summary + f'<div class="claims-table">{judged["table"]}</div>\n'


def on_post_build(config):
    if "judged" not in _state or os.environ.get("MLM_BOOK_CLAIMS_GATE") != "1":
        return
    failed = _state["judged"]["failed"]
    if failed:
        raise PluginError(f"{len(failed)} claims fail (see the Claims page, or `mlm-book verify`): {', '.join(failed)}")


def on_build_error(error):
    process = _state.get("process")
    if process is not None and process.poll() is None:
        process.kill()
        process.communicate()
