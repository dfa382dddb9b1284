"""MkDocs hook: the lab page (``docs/lab.md``) gets its data, its script and its style, and no other page does.

``on_post_page`` runs on the finished HTML of ``lab.md`` only and adds

* the payload of [`mlm_book.lab.viz_payload`][mlm_book.lab.viz_payload], inlined as
  ``<script type="application/json" id="lab-data">`` (a ``fetch`` of a local file is blocked
  over ``file://``, an inline element is not);
* ``assets/lab.css`` in the head and ``assets/lab.js`` right after the article (before the
  theme's and MathJax's scripts, so the views are drawn without waiting for them), by relative URL.

It runs after the search plugin has read the page's text, so the numbers of the payload do
not enter the search index. The payload is computed once per build (it loads the trained
HMM and filing encoders and chapter 7's measurements from the cache) when the lab page is first
written.
"""

from __future__ import annotations

import logging
import time

from mkdocs.utils import get_relative_url

LAB_PAGE = "lab.md"
DATA_ID = "lab-data"

log = logging.getLogger("mkdocs.hooks.lab")


def on_post_page(output, page, config):
    if page.file.src_uri != LAB_PAGE:
        return output
    from mlm_book.lab import payload_json, viz_payload

    start = time.perf_counter()
    data = payload_json(viz_payload())
    log.info("lab payload: %.0f kB in %.1f s", len(data.encode("utf-8")) / 1000, time.perf_counter() - start)
    css = get_relative_url("assets/lab.css", page.url)
    js = get_relative_url("assets/lab.js", page.url)
    head = f'<link rel="stylesheet" href="{css}">\n'
    body = (f'<script type="application/json" id="{DATA_ID}">{data}</script>\n'
            f'<script src="{js}"></script>\n')
    if "</head>" not in output or "</body>" not in output:
        raise ValueError(f"{LAB_PAGE}: the rendered page has no </head> or </body> to add the lab to")
    output = output.replace("</head>", head + "</head>", 1)
    # Right after the article, before the theme's and MathJax's scripts: the views are drawn
    # as soon as the page's text is parsed, without waiting for MathJax to load.
    index = output.index("</article>") + len("</article>") if "</article>" in output else output.rindex("</body>")
    return output[:index] + "\n" + body + output[index:]
