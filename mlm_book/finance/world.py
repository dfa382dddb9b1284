"""The fixed inventories of the synthetic filings: companies, aspects, news words, the lexicon.

Everything a filing can say is built from these lists. They are data, not randomness:
the generator in [`mlm_book.finance.corpus`][mlm_book.finance.corpus] draws from them with a seeded
`numpy.random.Generator`.

* **Companies.** Each of the 21 filers has a one-word *alias* (``kestrel``), an industry
  noun (``turbine``) and a legal suffix (``services``). The company is written
  "kestrel turbine services" or "kestrel"; its product is written "the kestrel turbine".
  Only the alias token carries the gold type (ORG or PRODUCT).
* **Aspects.** Financial line items, each with a polarity: $+1$ if an increase is good
  news (revenue), $-1$ if it is bad news (costs).
* **Direction words** follow an aspect directly and **evaluative verbs** follow it at 3–6
  tokens; both inherit the aspect's polarity as the news they report. All are "upward"
  words, so "costs rose" really is bad news and "revenue rose" good news.
* **Lexicon.** 35 evaluative adjectives with a dictionary polarity ($+1$ / $-1$). In the
  filings their polarity only agrees with the document's tone a little more often than not.
* **Seed words.** Three positive and three negative words, outside the lexicon, that state
  a document's tone; semantic orientation measures the lexicon against them.

Examples
--------
>>> COMPANIES[0]
Company(alias='kestrel', noun='turbine', plural='turbines', suffix='services')
>>> len(COMPANIES), len(LEXICON), len(DIRECTION_WORDS), len(EVALUATIVE_VERBS)
(21, 35, 6, 7)
>>> LEXICON["strong"], LEXICON["weak"]
(1, -1)
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = [
    "Company", "Aspect", "COMPANIES", "ASPECTS", "DIRECTION_WORDS", "EVALUATIVE_VERBS",
    "LEXICON", "POSITIVE_SEEDS", "NEGATIVE_SEEDS", "SEGMENTS", "ENTITY_NONE", "ENTITY_ORG",
    "ENTITY_PRODUCT", "ENTITY_NAMES",
]

#: Codes of the per-token entity annotation.
ENTITY_NONE, ENTITY_ORG, ENTITY_PRODUCT = 0, 1, 2
ENTITY_NAMES = ("-", "ORG", "PRODUCT")


@dataclass(frozen=True)
class Company:
    """A filer: "<alias> <noun> <suffix>" names the company, "the <alias> <noun>" its product.

    Each field is one lower-case token (no spaces): a filing writes it as a single word.

    Raises
    ------
    TypeError
        If a field is not a str.
    ValueError
        If a field is empty or contains whitespace.

    Examples
    --------
    >>> company = Company("kestrel", "turbine", "turbines", "services")
    >>> company.name, company.product
    (('kestrel', 'turbine', 'services'), ('the', 'kestrel', 'turbine'))
    """

    alias: str
    noun: str
    plural: str
    suffix: str

    def __post_init__(self):
        for name in ("alias", "noun", "plural", "suffix"):
            _check_word(getattr(self, name), name)

    @property
    def name(self) -> tuple[str, ...]:
        """The company's full name as tokens."""
        return (self.alias, self.noun, self.suffix)

    @property
    def product(self) -> tuple[str, ...]:
        """The product's name as tokens (with its article)."""
        return ("the", self.alias, self.noun)


@dataclass(frozen=True)
class Aspect:
    """A financial line item and the polarity of its increase (+1 good news, -1 bad news).

    Raises
    ------
    TypeError
        If ``words`` is not a tuple or list of str, or ``polarity`` not an integer.
    ValueError
        If ``words`` is empty or holds an empty or spaced word, or ``polarity`` is not +1 or -1.

    Examples
    --------
    >>> aspect = Aspect(("net", "income"), 1)
    >>> " ".join(aspect.words), aspect.polarity
    ('net income', 1)
    """

    words: tuple[str, ...]
    polarity: int

    def __post_init__(self):
        if not isinstance(self.words, (tuple, list)):
            raise TypeError(f"words must be a tuple of str, got {type(self.words).__name__}")
        if not self.words:
            raise ValueError("words must hold at least one word")
        for word in self.words:
            _check_word(word, "words")
        object.__setattr__(self, "words", tuple(self.words))
        if isinstance(self.polarity, bool) or not isinstance(self.polarity, (int, np.integer)):
            raise TypeError(f"polarity must be the integer +1 or -1, got {type(self.polarity).__name__}")
        if self.polarity not in (1, -1):
            raise ValueError(f"polarity must be +1 or -1, got {self.polarity}")


def _check_word(value, name: str) -> None:
    """A token of the filings: a non-empty str without whitespace."""
    if not isinstance(value, str):
        raise TypeError(f"{name} must be a str, got {type(value).__name__}")
    if not value or value.split() != [value]:
        raise ValueError(f"{name} must be one word (non-empty, no spaces), got {value!r}")


def _company(alias: str, noun: str, suffix: str, plural: str | None = None) -> Company:
    return Company(alias, noun, plural or noun + "s", suffix)


COMPANIES: tuple[Company, ...] = (
    _company("kestrel", "turbine", "services"),
    _company("osprey", "pump", "holdings"),
    _company("falcon", "valve", "industries"),
    _company("heron", "compressor", "systems"),
    _company("merlin", "drill", "group"),
    _company("harrier", "crane", "corporation"),
    _company("condor", "router", "technologies"),
    _company("petrel", "scanner", "international"),
    _company("curlew", "sensor", "holdings"),
    _company("plover", "engine", "group"),
    _company("bittern", "tractor", "industries"),
    _company("avocet", "boiler", "systems"),
    _company("lapwing", "loader", "corporation"),
    _company("puffin", "printer", "technologies"),
    _company("gannet", "modem", "international"),
    _company("egret", "forklift", "services"),
    _company("fulmar", "generator", "holdings"),
    _company("shrike", "inverter", "systems"),
    _company("siskin", "conveyor", "group"),
    _company("linnet", "harvester", "industries"),
    _company("starling", "battery", "corporation", "batteries"),
)

ASPECTS: tuple[Aspect, ...] = (
    Aspect(("revenue",), 1),
    Aspect(("sales",), 1),
    Aspect(("orders",), 1),
    Aspect(("operating", "income"), 1),
    Aspect(("net", "income"), 1),
    Aspect(("gross", "margin"), 1),
    Aspect(("cash", "flow"), 1),
    Aspect(("backlog",), 1),
    Aspect(("earnings",), 1),
    Aspect(("market", "share"), 1),
    Aspect(("costs",), -1),
    Aspect(("operating", "expenses"), -1),
    Aspect(("income", "taxes"), -1),
    Aspect(("debt",), -1),
    Aspect(("interest", "expense"), -1),
    Aspect(("impairment", "charges"), -1),
    Aspect(("material", "costs"), -1),
    Aspect(("warranty", "claims"), -1),
    Aspect(("restructuring", "charges"), -1),
    Aspect(("staff", "turnover"), -1),
)

#: Six upward direction words: they follow their aspect directly.
DIRECTION_WORDS: tuple[str, ...] = ("rose", "increased", "grew", "climbed", "advanced", "jumped")

#: Seven evaluative verbs: their aspect term ends 3 to 6 tokens before them.
EVALUATIVE_VERBS: tuple[str, ...] = ("surpassed", "exceeded", "outpaced", "beat", "topped",
                                     "outstripped", "overshot")

_POSITIVE_LEXICON = ("strong", "robust", "solid", "favourable", "healthy", "resilient", "buoyant",
                     "firm", "sound", "stable", "encouraging", "positive", "improving", "steady",
                     "vigorous", "promising", "attractive", "upbeat")
_NEGATIVE_LEXICON = ("weak", "soft", "fragile", "unfavourable", "sluggish", "volatile", "uncertain",
                     "challenging", "adverse", "difficult", "subdued", "muted", "negative",
                     "deteriorating", "depressed", "tough", "disappointing")

#: The 35-word polarity lexicon: word -> +1 (positive) or -1 (negative).
LEXICON: dict[str, int] = {**{w: 1 for w in _POSITIVE_LEXICON}, **{w: -1 for w in _NEGATIVE_LEXICON}}

#: Tone words used as semantic-orientation seeds; none of them is a lexicon word.
POSITIVE_SEEDS: tuple[str, ...] = ("good", "excellent", "successful")
NEGATIVE_SEEDS: tuple[str, ...] = ("bad", "poor", "unsuccessful")

#: Business segments (single tokens).
SEGMENTS: tuple[str, ...] = ("power", "marine", "rail", "aviation", "mining", "water", "energy",
                             "industrial", "defence", "healthcare", "retail", "logistics",
                             "agriculture", "construction", "telecoms", "automotive")

assert len(LEXICON) == 35 and not set(LEXICON) & set(POSITIVE_SEEDS + NEGATIVE_SEEDS)
