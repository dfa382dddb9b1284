"""MkDocs hook: the Claims page, generated at build time by ``mlm_book.ledger.verify``.

The page shows the same claims as ``mlm-book verify``: every registered claim recomputed
by the package during this build, with the reference text's value, the book's value, the
rule and the verdict. Each row carries its claim's id as an anchor, which the chapters'
claims summaries link to, and the id links to the section of the chapter (or of the lab) that
makes the claim (``Claim.section``).

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
from pathlib import Path

import mkdocs.plugins
from mkdocs.exceptions import PluginError
from mkdocs.structure.files import File

INTRO = """# Claims

Every claim the book makes about a number, recomputed by the package while this site was built
and judged by a rule fixed before the number was seen. *reference* is the published value it
is compared with, where there is one (see [Sources and references](references.md)); *book* is
what `mlm_book` computes here; *rule* is the acceptance rule. The claims are grouped by the
chapter that makes them, and each chapter ends with a summary of its own that links here; a
claim's id links to the section of its chapter that makes it. An id that begins with S follows
the sections of the page the book reproduces; D marks a further concept the book states its own
rule for, and Q an open question it answers by experiment. The same table prints with
`mlm-book verify`, which exits non-zero if any claim fails.

"""

LEGEND = """<dl class="claims-legend">
<dt>reproduced</dt><dd>The rule holds at every training seed of a learned number, or, for a rule
computed once, it holds.</dd>
<dt>seed-dependent</dt><dd>The rule holds at some training seeds and not at others.</dd>
<dt>not reproduced</dt><dd>The rule holds at no seed, or, computed once, it does not hold. The chapter
says so and says why.</dd>
<dt>pass</dt><dd>An exact result or a count, checked on its single value.</dd>
<dt>reported</dt><dd>A number set beside the published one with no rule, because any rule would hold by
construction; listed apart under each chapter.</dd>
<dt>FAIL</dt><dd>The verdict is not the one the chapter states, or the value could not be computed.
A failing claim fails the book's build.</dd>
</dl>

Each of the first three verdicts passes when it is the verdict its chapter states, so that a
sentence such as "this holds at every seed" is itself checked.

"""

def on_config(config):
    nav = config["nav"]
    nav.insert(len(nav) - 1, {"Claims": "claims.md"})
    return config


log = logging.getLogger("mkdocs.hooks.claims")
_state: dict = {}

# Where the claims of a module of mlm_book.experiments belong when its name does not say: a module chNN_* belongs
# to chapter NN, and a new module of another name must be added here (tests/test_ledger.py reads this too).
MODULE_CHAPTERS = {"hmm_encoder": 2, "lab_figures": "lab"}

# Run in a process of its own: every claim judged, grouped by the chapter whose module declares it, and
# printed as each group's tables and counts (JSON on the last line). Its argument (JSON) gives MODULE_CHAPTERS and
# each group's page, where each row's id links to the section that makes its claim.
JUDGE = """
import json, re, sys
from mlm_book import ledger

given = json.loads(sys.argv[1])

def chapter(module):
    found = re.match(r"ch(\\d\\d)_", module)
    if found:
        return int(found.group(1))
    return given["chapters"][module]  # a new module must say where its claims belong (MODULE_CHAPTERS)

def page_of(key):
    return given["pages"][str(key)]

results = ledger.verify()
modules = ledger.claim_modules()
groups = {}
for result in results:
    groups.setdefault(chapter(modules[result.claim.id]), []).append(result)
judged = [result for result in results if not result.claim.reported]
page = []
for key in sorted(groups, key=lambda key: (isinstance(key, str), str(key).zfill(3))):
    group = groups[key]
    claims = [result for result in group if not result.claim.reported]
    reported = [result for result in group if result.claim.reported]
    page.append({"chapter": key, "counts": ledger.verdict_counts(group),
                 "text": ledger.verdict_text(ledger.verdict_counts(group)),
                 "claims": ledger.to_html(claims, chapter_page=page_of(key)) if claims else "",
                 "reported": ledger.to_html(reported, chapter_page=page_of(key)) if reported else ""})
print(json.dumps({"groups": page, "counts": ledger.verdict_counts(results),
                  "text": ledger.verdict_text(ledger.verdict_counts(results)),
                  "passed": sum(result.passed for result in judged), "judged": len(judged),
                  "failed": [result.claim.id for result in results if not result.passed]}))
"""


def _chapter_heading(key, root: Path) -> tuple[str, str]:
    """The title and the page of a group's chapter, read from the chapter's script (or the lab)."""
    if key == "lab":
        return "The lab", "lab.md"
    (script,) = sorted((root / "chapters").glob(f"{key:02d}_*.py"))
    title = next(line[4:].strip() for line in script.read_text(encoding="utf-8").splitlines()
                 if line.startswith("# # "))
    return title, f"chapters/{script.name}"


def _pages(root: Path) -> dict[str, str]:
    """Each group's page as the built site names it, from the Claims page: every chapter's, and the lab's."""
    pages = {str(int(script.name[:2])): f"chapters/{script.stem}.html"
             for script in (root / "chapters").glob("[0-9][0-9]_*.py")}
    return {**pages, "lab": "lab.html"}


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
    given = {"chapters": MODULE_CHAPTERS, "pages": _pages(Path(config["config_file_path"]).parent)}
    _state["process"] = subprocess.Popen([sys.executable, "-c", JUDGE, json.dumps(given)], stdout=subprocess.PIPE,
                                         stderr=subprocess.PIPE, text=True)
    files.append(File.generated(config, "claims.md", content="# Claims\n"))
    return files


def on_page_markdown(markdown, page, config, files):
    if page.file.src_uri != "claims.md" or "process" not in _state:
        return markdown
    judged = _judged()
    counts, passed = judged["counts"], judged["passed"]
    summary = (f"**{passed} of {judged['judged']} claims pass:** {judged['text']}. "
               f"**{counts['reported']}** more numbers are reported with no rule.\n\n")
    sections = []
    for group in judged["groups"]:
        title, page_path = _chapter_heading(group["chapter"], Path(config["config_file_path"]).parent)
        group_counts = group["counts"]
        total = sum(group_counts[key] for key in ("reproduced", "seed-dependent", "not reproduced", "single value"))
        text = [f"## {title}\n", f"[{title.split(' — ')[0]}]({page_path}) makes {total} "
                f"claim{'s' if total != 1 else ''}: {group['text']}.\n"]
        if group["claims"]:
            text.append(f'<div class="claims-table">{group["claims"]}</div>\n')
        if group["reported"]:
            text.append(f"Reported beside the published value, with no rule ({group_counts['reported']}):\n")
            text.append(f'<div class="claims-table">{group["reported"]}</div>\n')
        sections.append("\n".join(text))
    log.info("claims: %d of %d pass (%d reported values)", passed, judged["judged"], counts["reported"])
    return INTRO + summary + LEGEND + "\n".join(sections)


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
