"""MkDocs hook: the Claims page, generated at build time by :func:`mlm_book.ledger.verify`.

The page shows the same table as ``mlm-book verify``: every registered claim recomputed
by the package during this build, with the seed's value, the book's value, the rule and
the verdict. A claim that fails is shown as failing; it does not stop the build (``make
test`` runs ``mlm-book verify``, which does).
"""

from __future__ import annotations

import mkdocs.plugins
from mkdocs.structure.files import File

from mlm_book import ledger

INTRO = """# Claims

Every number the topic page states, recomputed by the package while this site was built.
*seed* is the topic page's value; *book* is what `mlm_book` computes here; *rule* is the
acceptance rule (the project's claims list's, or tighter). The same table prints with
`mlm-book verify`, which exits non-zero if any claim fails.

"""


def on_config(config):
    nav = config["nav"]
    nav.insert(len(nav) - 1, {"Claims": "claims.md"})
    return config


@mkdocs.plugins.event_priority(90)
def on_files(files, config):
    results = ledger.verify()
    passed = sum(result.passed for result in results)
    summary = f"**{passed} of {len(results)} claims pass.**\n\n"
    table = ledger.to_markdown(results)
    content = INTRO + summary + '<div class="claims-table" markdown>\n\n' + table + "\n\n</div>\n"
    files.append(File.generated(config, "claims.md", content=content))
    return files
