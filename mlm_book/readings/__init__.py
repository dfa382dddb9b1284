"""Readings: what the book reads off its artefacts when more than one chapter reads it.

A chapter module (``mlm_book.experiments``) shows its own results and never imports another
chapter's module. When two chapters (or a chapter and the lab) read the same thing off a
trained or slow artefact (the HMM encoder's vectors of the probe splits and its layer table,
the sense probes on them, the filings' static baselines, the span taggers' entity scores),
that read-out lives here, once: below the chapters, above the artefact floor
([`mlm_book.artefacts`][mlm_book.artefacts]) and the core modules. A reading module imports
artefacts and core modules, never a chapter module, and builds or keys nothing itself: what
is slow is an artefact kind, read through that kind's public function.
"""
