r"""A seeded generator of synthetic annual-report filings with gold annotations per token.

A *filing* is a sequence of lower-cased word tokens, with ``[SEP]`` between sentences (not
after the last). Each filing is written by one of the 21 companies of
[`mlm_book.finance.world`][mlm_book.finance.world] and has a latent *tone* $T \in \{+1, -1\}$ (a good or a bad
year). Its sentences are drawn from templates in the register of annual reports:

* an opening line and a company description, which name the filer (ORG);
* **news sentences**: an aspect followed directly by a direction word ("costs rose 4
  percent in the rail segment") or, 3 to 6 tokens later, by an evaluative verb ("income
  taxes in the power segment surpassed expectations"). The direction word or verb is
  labelled with the aspect's polarity, the news it reports. Aspects are drawn with equal
  probability from good-when-up and bad-when-up items, independently of the tone;
* **lexicon sentences** with one or two lexicon adjectives in slots whose neighbours do not
  depend on polarity. Each lexicon word agrees with the tone with probability
  ``lexicon_tone_agreement`` (0.7), except the second word of a *contrast* sentence
  ("despite weak demand margins remained firm"), which takes the opposite polarity of the
  first. So a word's polarity shows when pooled over many documents, and the sentence it
  sits in barely writes it down;
* one **tone sentence** with a seed word ("the board regards 2014 as a good year"), which
  agrees with the tone with probability ``seed_tone_agreement``;
* **filler sentences** naming places, people and amounts, drawn from long-tailed pools:
  they make the rare words that a min-count vocabulary leaves out;
* a **closing sentence** naming a product (PRODUCT), with probability
  ``closing_product_rate``. It names the kestrel turbine with probability
  ``kestrel_product_share`` and the filer's own product otherwise.

Kestrel files fewer reports than the others (``kestrel_share``), so its ORG and PRODUCT
mentions come out near balanced while every other alias is mostly ORG.

Besides the per-token labels, every *mention* of a named thing is annotated as a whole
span ([`MENTION_TYPES`][mlm_book.finance.corpus.MENTION_TYPES]): a company written in full
("kestrel turbine services", three tokens) or by its alias (one), ORG; a product's alias and
noun ("kestrel turbine"; the article stays outside), PRODUCT; a person's first name and
surname, PERSON; a place or a country, LOC. Countries are listed back to back in some
sentences ("in germany france and italy"), so two LOC mentions can touch.

Examples
--------
>>> import numpy as np
>>> corpus = generate_corpus(CorpusConfig(n_documents=3), np.random.default_rng(0))
>>> corpus.n_documents, str(corpus.tokens[-1]) != "[SEP]"
(3, True)
>>> set(corpus.alias[corpus.entity == 1].tolist()) <= set(corpus.filer.tolist())  # ORG names the filer
True
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, fields

import numpy as np

from mlm_book.finance.world import (
    ASPECTS, COMPANIES, DIRECTION_WORDS, ENTITY_NONE, ENTITY_ORG, ENTITY_PRODUCT, EVALUATIVE_VERBS,
    LEXICON, NEGATIVE_SEEDS, POSITIVE_SEEDS, SEGMENTS,
)
from mlm_book.validation import as_int_array, check_generator, check_instance, check_positive_int, check_probability

__all__ = ["CorpusConfig", "Corpus", "generate_corpus", "render_document", "corpus_fingerprint", "mention_spans",
           "SEP", "MENTION_TYPES", "VERB_PLACEMENTS"]

#: The sentence separator token.
SEP = "[SEP]"

MENTION_TYPES = ("ORG", "PRODUCT", "PERSON", "LOC")
"""Types of the annotated mentions; ``Corpus.mention_type`` indexes this tuple."""

_POSITIVE_LEX = tuple(w for w, p in LEXICON.items() if p > 0)
_NEGATIVE_LEX = tuple(w for w, p in LEXICON.items() if p < 0)

_PLACE_HEADS = ("ash", "brook", "clay", "dun", "elm", "fair", "glen", "hart", "ives", "kings",
                "lang", "mill", "north", "oak", "pen", "queens", "red", "stan", "thorn", "ux",
                "wal", "west", "york", "bram", "cran", "dal", "east", "fen", "gras", "hol",
                "kel", "lin", "mar", "nor", "ost", "pell", "ros", "sal", "tam", "ver")
_PLACE_TAILS = ("ford", "field", "ton", "wick", "worth", "dale", "mouth", "port", "bury", "ham",
                "ley", "stead", "bridge", "by", "thorpe", "well", "hurst", "combe", "mere", "haven",
                "minster", "gate", "holm", "cliff", "brook", "moor", "chester", "wood", "borough", "stow")
_PERSON_HEADS = ("al", "bar", "cal", "dor", "ed", "fal", "gar", "hal", "jor", "kin", "lor", "mor",
                 "nel", "or", "pat", "rad", "sol", "tal", "val", "wes", "bren", "cor", "dav", "fen")
_PERSON_TAILS = ("sen", "ton", "wood", "ley", "man", "ridge", "by", "well", "son", "more",
                 "ford", "ham", "er", "kins", "lowe", "field", "ston", "wright", "ing", "hart",
                 "mont", "ell", "ick", "ward", "cott")
_FIRST_NAMES = ("anna", "david", "maria", "james", "sarah", "peter", "helen", "thomas", "laura",
                "michael", "karen", "robert", "susan", "paul", "julia", "mark", "claire", "simon",
                "emma", "richard", "ruth", "andrew", "nina", "george", "alice", "martin", "irene",
                "philip", "grace", "stephen", "olivia", "daniel", "fiona", "henry", "joanna", "kevin",
                "lucy", "matthew", "natalie", "oliver", "rachel", "samuel", "tanya", "victor",
                "wendy", "adrian", "bridget", "colin", "diana", "edward", "frances", "gordon",
                "hannah", "ian", "jane", "keith", "linda", "neil", "paula", "roger", "sophie",
                "trevor", "ursula", "vincent", "yvonne", "arthur", "beatrice", "charles", "denise",
                "eric", "gillian", "howard", "isabel", "jonathan", "kathryn", "leonard", "miriam",
                "nicholas", "patricia", "raymond", "sheila", "timothy")
_COUNTRIES = ("germany", "france", "brazil", "india", "china", "japan", "canada", "mexico", "spain",
              "italy", "poland", "norway", "sweden", "finland", "denmark", "austria", "belgium",
              "ireland", "portugal", "greece", "turkey", "egypt", "kenya", "nigeria", "chile",
              "peru", "colombia", "argentina", "australia", "singapore", "malaysia", "indonesia",
              "vietnam", "thailand", "korea", "taiwan", "qatar", "oman", "morocco", "ghana",
              "romania", "hungary", "czechia", "slovakia", "croatia", "serbia", "ukraine", "estonia")
_MATERIALS = ("copper", "aluminium", "nickel", "zinc", "cobalt", "lithium", "silicon", "graphite",
              "titanium", "tungsten", "polymer", "resin", "cement", "gypsum", "sand", "gravel",
              "diesel", "gas", "coal", "hydrogen", "ammonia", "ethanol", "solvent", "lubricant",
              "bearings", "gears", "motors", "pistons", "seals", "filters", "magnets", "wiring",
              "chips", "displays", "lenses", "fasteners", "springs", "castings", "forgings", "hoses")
_DEPARTMENTS = ("engineering", "finance", "marketing", "legal", "purchasing", "quality", "design",
                "manufacturing", "sales", "operations", "research", "treasury", "investor",
                "people", "facilities", "estates", "security", "planning", "strategy", "customer",
                "technical", "digital", "supply", "warranty", "export")
_TERMS = ("goodwill", "pensions", "leases", "provisions", "inventories", "receivables", "payables",
          "derivatives", "hedging", "depreciation", "amortisation", "impairment", "revaluation",
          "tax", "borrowings", "covenants", "liquidity", "dividends", "remuneration", "auditing",
          "risk", "controls", "insurance", "litigation", "sustainability", "emissions", "safety",
          "cybersecurity", "procurement", "succession", "governance", "compliance", "bribery",
          "whistleblowing", "diversity", "training", "apprenticeships", "recycling", "energy",
          "water")
_FACILITIES = ("plant", "factory", "warehouse", "depot", "laboratory", "terminal", "workshop",
               "foundry", "mill", "refinery", "yard", "hangar", "campus", "centre", "facility",
               "store", "showroom", "smelter", "quarry", "pier", "dock", "substation", "hub",
               "studio", "clinic", "assembly", "test", "training", "service", "repair")
_PROJECTS = ("upgrade", "expansion", "programme", "project", "contract", "tender", "venture",
             "partnership", "licence", "concession", "retrofit", "overhaul", "extension",
             "pipeline", "rollout", "pilot", "migration", "refurbishment", "modernisation", "audit")
_KINDS = ("utilities", "logistics", "engineering", "metals", "foods", "shipping", "chemicals",
          "minerals", "castings", "textiles", "plastics", "electrics", "ceramics", "paper", "glass",
          "timber", "rubber", "cables", "steel", "fibres", "packaging", "haulage", "pharmaceuticals",
          "fertilisers", "tools")
_ROLES = (("chief", "executive"), ("chief", "financial", "officer"), ("chair",),
          ("non", "executive", "director"), ("company", "secretary"), ("chief", "operating", "officer"))
_MONTHS = ("january", "february", "march", "april", "may", "june", "july", "august", "september",
           "october", "november", "december")
_TARGETS = (("expectations",), ("forecasts",), ("guidance",), ("the", "budget"), ("the", "plan"),
            ("analyst", "estimates"), ("the", "prior", "year"))
_LEX_NOUNS = ("performance", "results", "demand", "pricing", "conditions", "position", "outlook",
              "footing", "quarter", "momentum", "environment", "recovery")
# Slots filled by one word of a pool, and slots filled by one phrase of a pool (uniform draws).
_WORD_SLOTS = {"{SEG}": SEGMENTS, "{MONTH}": _MONTHS, "{MATERIAL}": _MATERIALS, "{DEPARTMENT}": _DEPARTMENTS,
               "{COUNTRY}": _COUNTRIES, "{TERM}": _TERMS, "{FACILITY}": _FACILITIES, "{PROJECT}": _PROJECTS,
               "{KIND}": _KINDS, "{LNOUN}": _LEX_NOUNS}
_PHRASE_SLOTS = {"{ROLE}": _ROLES, "{TARGET}": _TARGETS}

# Templates: tuples of literal words and {SLOT} markers. Every slot is filled by sentence_from.
_OPENINGS = (
    ("{FULL}", "annual", "report", "{YEAR}"),
    ("{FULL}", "annual", "report", "and", "accounts", "for", "the", "year", "ended", "{MONTH}", "{YEAR}"),
    ("annual", "report", "of", "{FULL}", "for", "{YEAR}"),
)
_INTROS = (
    ("{FULL}", "designs", "and", "builds", "{NOUNS}", "for", "{SEG}", "and", "{SEG}", "customers"),
    ("{FULL}", "is", "a", "leading", "supplier", "of", "{NOUNS}", "to", "the", "{SEG}", "sector"),
    ("founded", "in", "{PLACE}", "{FULL}", "makes", "{NOUNS}", "for", "{SEG}", "markets"),
    ("{FULL}", "operates", "{NUM}", "plants", "and", "serves", "customers", "in", "{COUNTRY}",
     "and", "{COUNTRY}"),
    ("{FULL}", "sells", "{NOUNS}", "in", "{COUNTRY}", "{COUNTRY}", "and", "{COUNTRY}"),
)
_DIRECTION_SENTENCES = (
    ("{ASP}", "{DIR}", "{NUM}", "percent", "in", "the", "{SEG}", "segment"),
    ("in", "{SEG}", "{ASP}", "{DIR}", "{NUM}", "percent", "to", "{AMT}", "million"),
    ("at", "{ORG}", "{ASP}", "{DIR}", "{NUM}", "percent", "during", "the", "year"),
    ("{ORG}", "said", "that", "{ASP}", "{DIR}", "{NUM}", "percent", "in", "{YEAR}"),
    ("group", "{ASP}", "{DIR}", "to", "{AMT}", "million", "in", "{YEAR}"),
    ("for", "the", "year", "as", "a", "whole", "{ASP}", "{DIR}", "by", "{NUM}", "percent"),
)
_VERB_SENTENCES = (  # aspect head to verb: 3, 5, 6, 5, 5, 4 tokens
    ("{ASP}", "in", "{SEG}", "{VERB}", "{TARGET}"),
    ("{ASP}", "in", "the", "{SEG}", "segment", "{VERB}", "{TARGET}"),
    ("{ASP}", "for", "the", "year", "in", "{SEG}", "{VERB}", "{TARGET}"),
    ("{ASP}", "at", "{ORG}", "in", "{SEG}", "{VERB}", "{TARGET}"),
    ("{ASP}", "across", "the", "{SEG}", "business", "{VERB}", "{TARGET}"),
    ("{ASP}", "in", "{SEG}", "and", "{SEG}", "{VERB}", "{TARGET}", "again"),
)
# The same sentences with the phrase between aspect and verb moved after the target: the verb follows the aspect's
# head directly, as a direction word does, and each sentence keeps its words and slots (the open question of
# whether distance is why the verbs read worse than the direction words).
_ADJACENT_VERB_SENTENCES = (
    ("{ASP}", "{VERB}", "{TARGET}", "in", "{SEG}"),
    ("{ASP}", "{VERB}", "{TARGET}", "in", "the", "{SEG}", "segment"),
    ("{ASP}", "{VERB}", "{TARGET}", "for", "the", "year", "in", "{SEG}"),
    ("{ASP}", "{VERB}", "{TARGET}", "at", "{ORG}", "in", "{SEG}"),
    ("{ASP}", "{VERB}", "{TARGET}", "across", "the", "{SEG}", "business"),
    ("{ASP}", "{VERB}", "{TARGET}", "again", "in", "{SEG}", "and", "{SEG}"),
)
VERB_PLACEMENTS = ("book", "adjacent")
"""Where an evaluative verb sits: ``"book"``, 3 to 6 tokens after its aspect's head; ``"adjacent"``, right after it."""
_LEXICON_ONE = (
    ("demand", "in", "{SEG}", "remained", "{LEX}"),
    ("management", "described", "trading", "in", "{PLACE}", "as", "{LEX}"),
    ("the", "group", "reported", "a", "{LEX}", "{LNOUN}", "in", "{SEG}"),
    ("{ORG}", "enters", "{YEAR}", "with", "a", "{LEX}", "{LNOUN}"),
    ("the", "outlook", "for", "the", "{SEG}", "segment", "is", "{LEX}"),
    ("conditions", "in", "the", "{SEG}", "market", "were", "{LEX}", "throughout", "{YEAR}"),
)
_LEXICON_TWO = (
    ("demand", "was", "{LEX}", "and", "pricing", "remained", "{LEX}"),
    ("{ORG}", "saw", "{LEX}", "{LNOUN}", "and", "{LEX}", "{LNOUN}", "in", "{SEG}"),
    ("the", "board", "noted", "a", "{LEX}", "order", "book", "and", "a", "{LEX}", "{LNOUN}"),
)
_LEXICON_CONTRAST = (  # the second lexicon word has the opposite polarity of the first
    ("despite", "{LEX}", "demand", "margins", "remained", "{LEXOPP}"),
    ("{LEX}", "pricing", "in", "{SEG}", "offset", "{LEXOPP}", "volumes"),
)
_TONE_SENTENCES = (
    ("the", "board", "regards", "{YEAR}", "as", "a", "{SEED}", "year", "for", "{ORG}"),
    ("overall", "it", "was", "a", "{SEED}", "year", "for", "the", "group"),
    ("the", "chair", "called", "the", "year", "{SEED}"),
)
_ORG_SENTENCES = (
    ("{ORG}", "employs", "{AMT}", "people", "in", "{NUM}", "countries"),
    ("{ORG}", "opened", "a", "new", "office", "in", "{PLACE}"),
    ("the", "directors", "of", "{FULL}", "present", "their", "report"),
    ("{ORG}", "paid", "a", "dividend", "of", "{NUM}", "pence", "per", "share"),
    ("shares", "in", "{ORG}", "are", "listed", "in", "{PLACE}"),
    ("{ORG}", "invested", "{AMT}", "million", "in", "research", "and", "development"),
)
_FILLER_SENTENCES = (
    ("the", "{PLACE}", "{FACILITY}", "employs", "{AMT}", "people"),
    ("{PERSON}", "was", "appointed", "{ROLE}", "in", "{MONTH}"),
    ("the", "company", "acquired", "{PLACE}", "{KIND}", "for", "{AMT}", "million"),
    ("{PERSON}", "retired", "from", "the", "board", "after", "{NUM}", "years"),
    ("the", "{SEG}", "business", "won", "the", "{PLACE}", "{PROJECT}", "with", "{PLACE}", "{KIND}"),
    ("a", "new", "{FACILITY}", "near", "{PLACE}", "was", "completed", "in", "{MONTH}"),
    ("{PERSON}", "and", "{PERSON}", "joined", "the", "audit", "committee"),
    ("the", "{FACILITY}", "at", "{PLACE}", "was", "sold", "to", "{PLACE}", "{KIND}"),
    ("the", "{PLACE}", "{PROJECT}", "was", "led", "by", "{PERSON}", "of", "{PLACE}", "{KIND}"),
    ("sites", "in", "{PLACE}", "{PLACE}", "and", "{PLACE}", "passed", "their", "{PROJECT}"),
    ("{PERSON}", "chairs", "the", "{PLACE}", "{FACILITY}", "committee"),
    ("exports", "to", "{COUNTRY}", "and", "{COUNTRY}", "were", "handled", "from", "{PLACE}"),
    ("note", "{NUM}", "sets", "out", "the", "policy", "on", "{TERM}"),
    ("the", "audit", "committee", "reviewed", "{TERM}", "and", "{TERM}"),
    ("a", "{FACILITY}", "in", "{COUNTRY}", "opened", "in", "{MONTH}", "{YEAR}"),
    ("{PERSON}", "reported", "to", "the", "board", "on", "{TERM}", "in", "{COUNTRY}"),
    ("the", "{FACILITY}", "in", "{PLACE}", "buys", "{MATERIAL}", "and", "{MATERIAL}", "from", "{COUNTRY}"),
    ("{PERSON}", "heads", "the", "{DEPARTMENT}", "team", "at", "{PLACE}"),
    ("supplies", "of", "{MATERIAL}", "were", "secured", "through", "{YEAR}"),
    ("the", "{DEPARTMENT}", "function", "moved", "to", "{PLACE}", "in", "{MONTH}"),
    ("{PLACE}", "{KIND}", "supplies", "{MATERIAL}", "to", "the", "{PLACE}", "{FACILITY}"),
)
_CLOSINGS = (  # the product mention closes the document
    ("customers", "in", "{PLACE}", "ordered", "{NUM}", "units", "of", "{PROD}"),
    ("next", "year", "the", "group", "will", "deliver", "{PROD}", "to", "{PLACE}"),
    ("the", "order", "book", "is", "led", "by", "{PROD}"),
    ("{NUM}", "new", "contracts", "were", "signed", "for", "{PROD}"),
)


@dataclass(frozen=True)
class CorpusConfig:
    r"""Settings of the filings generator (the defaults make the book's corpus).

    Parameters
    ----------
    n_documents : int
        Number of filings (300).
    kestrel_share : float
        Share of the filings that kestrel files (rounded to a whole number); the rest are
        shared as evenly as possible by the other 20 companies.
    direction_rate, verb_rate, lexicon_rate, org_rate, filler_rate : float
        Poisson means of the number of direction-word, evaluative-verb, lexicon, ORG and
        filler sentences per filing.
    two_lexicon_share : float
        Probability that a lexicon sentence carries two lexicon words rather than one.
    contrast_share : float
        Probability that a two-word lexicon sentence is a contrast ("despite weak demand
        margins remained firm"): its second word then takes the opposite polarity of the first.
    lexicon_tone_agreement : float
        Probability that a lexicon word's polarity agrees with the filing's tone.
    seed_tone_agreement : float
        Probability that the tone sentence's seed word agrees with the tone.
    closing_product_rate : float
        Probability that a filing closes with a product sentence.
    kestrel_product_share : float
        Probability that a closing product (of a non-kestrel filing) is the kestrel turbine.
    place_pool, person_pool : int
        Sizes of the long-tailed pools of place and person names.
    zipf_exponent : float
        Exponent $a$ of the pools' weights $\propto (r + 3)^{-a}$ at rank $r$.
    verb_placement : str
        One of [`VERB_PLACEMENTS`][mlm_book.finance.corpus.VERB_PLACEMENTS]: the book's verb sentences, or the
        same sentences with the verb moved next to its aspect (the same words, slots and number of sentences).
    """

    n_documents: int = 300
    kestrel_share: float = 0.04
    direction_rate: float = 2.3
    verb_rate: float = 0.8
    lexicon_rate: float = 3.55
    org_rate: float = 0.95
    filler_rate: float = 9.0
    two_lexicon_share: float = 0.3
    contrast_share: float = 0.15
    lexicon_tone_agreement: float = 0.7
    seed_tone_agreement: float = 0.85
    closing_product_rate: float = 0.85
    kestrel_product_share: float = 0.21
    place_pool: int = 1200
    person_pool: int = 600
    zipf_exponent: float = 0.6
    verb_placement: str = "book"

    def __post_init__(self):
        if not isinstance(self.verb_placement, str):
            raise TypeError(f"verb_placement must be a str, got {type(self.verb_placement).__name__}")
        if self.verb_placement not in VERB_PLACEMENTS:
            raise ValueError(f"verb_placement must be one of {VERB_PLACEMENTS}, got {self.verb_placement!r:.60}")
        check_positive_int(self.n_documents, "n_documents")
        for name in ("direction_rate", "verb_rate", "lexicon_rate", "org_rate", "filler_rate"):
            check_probability(getattr(self, name), name, high=50.0)
        for name in ("kestrel_share", "two_lexicon_share", "contrast_share", "lexicon_tone_agreement", "seed_tone_agreement",
                     "closing_product_rate", "kestrel_product_share"):
            check_probability(getattr(self, name), name)
        check_positive_int(self.place_pool, "place_pool")
        check_positive_int(self.person_pool, "person_pool")
        if self.place_pool > len(_PLACE_HEADS) * len(_PLACE_TAILS):
            raise ValueError(f"place_pool must be at most {len(_PLACE_HEADS) * len(_PLACE_TAILS)}")
        if self.person_pool > len(_PERSON_HEADS) * len(_PERSON_TAILS):
            raise ValueError(f"person_pool must be at most {len(_PERSON_HEADS) * len(_PERSON_TAILS)}")
        check_probability(self.zipf_exponent, "zipf_exponent", high=10.0)

    def as_dict(self) -> dict:
        """The settings as a JSON-ready mapping (a cache key)."""
        return {field.name: getattr(self, field.name) for field in fields(self)}


@dataclass(frozen=True, eq=False)
class Corpus:
    """Filings as one token stream with per-token gold annotations (all arrays of shape ``(n,)``).

    Attributes
    ----------
    tokens : numpy.ndarray of str
        Lower-cased word tokens and ``[SEP]``.
    document : numpy.ndarray of int
        Filing index of each token.
    sentence : numpy.ndarray of int
        Global sentence index (a ``[SEP]`` belongs to the sentence it closes).
    position : numpy.ndarray of int
        Index of the token inside its filing, ``[SEP]`` counted.
    entity : numpy.ndarray of int
        ``ENTITY_ORG`` (1) or ``ENTITY_PRODUCT`` (2) on alias tokens, 0 elsewhere.
    alias : numpy.ndarray of int
        Index into `COMPANIES` on alias tokens, -1 elsewhere.
    aspect : numpy.ndarray of int
        Index into `ASPECTS` on the words of an aspect term, -1 elsewhere.
    news : numpy.ndarray of int
        +1 / -1 on direction words and evaluative verbs (the aspect's polarity), 0 elsewhere.
    head : numpy.ndarray of int
        On direction words and verbs, the stream index of the last word of their aspect term; -1 elsewhere.
    lexicon : numpy.ndarray of int
        The dictionary polarity (+1 / -1) on lexicon words, 0 elsewhere.
    mention : numpy.ndarray of int
        The index of the mention a token belongs to (0, 1, ... in order of appearance;
        a mention's tokens are consecutive and inside one sentence), -1 outside mentions.
    mention_type : numpy.ndarray of int
        Index into `MENTION_TYPES` on the tokens of a mention, -1 elsewhere.
    tone : numpy.ndarray of int
        Shape ``(n_documents,)``: each filing's latent tone, +1 or -1.
    filer : numpy.ndarray of int
        Shape ``(n_documents,)``: each filing's company index.
    config : CorpusConfig
        The settings that made it.

    Raises
    ------
    TypeError
        If ``tokens`` is not an array of str, an annotation not an array of integers, or
        ``config`` not a `CorpusConfig`.
    ValueError
        If an array has the wrong shape, ``document`` does not run through the filings in
        order, ``position`` is not each token's index in its filing, or a code is out of range.

    Examples
    --------
    >>> x = generate_corpus(CorpusConfig(n_documents=3), np.random.default_rng(0))
    >>> from dataclasses import fields
    >>> rebuilt = Corpus(**{f.name: getattr(x, f.name) for f in fields(x)})   # its fields are checked
    >>> rebuilt.n_documents
    3
    """

    tokens: np.ndarray
    document: np.ndarray
    sentence: np.ndarray
    position: np.ndarray
    entity: np.ndarray
    alias: np.ndarray
    aspect: np.ndarray
    news: np.ndarray
    head: np.ndarray
    lexicon: np.ndarray
    mention: np.ndarray
    mention_type: np.ndarray
    tone: np.ndarray
    filer: np.ndarray
    config: CorpusConfig

    def __post_init__(self):
        # Vectorised checks only: the book's corpus has ~10^5 tokens and is rebuilt often.
        check_instance(self.config, "config", CorpusConfig)
        tokens = self.tokens
        if not isinstance(tokens, np.ndarray) or tokens.dtype.kind != "U":
            raise TypeError(f"tokens must be a numpy array of str, got {type(tokens).__name__}"
                            + (f" of dtype {tokens.dtype}" if isinstance(tokens, np.ndarray) else ""))
        if tokens.ndim != 1 or tokens.size == 0:
            raise ValueError(f"tokens must be a non-empty 1-dimensional array, got shape {tokens.shape}")
        n = tokens.shape[0]
        arrays = {}
        for name in ("document", "sentence", "position", "entity", "alias", "aspect", "news", "head", "lexicon",
                     "mention", "mention_type"):
            array = as_int_array(getattr(self, name), name, ndim=1)
            if array.shape != (n,):
                raise ValueError(f"{name} must have one entry per token of tokens ({n}), got shape {array.shape}")
            arrays[name] = array
        for name in ("tone", "filer"):
            array = as_int_array(getattr(self, name), name, ndim=1)
            if array.shape != (self.config.n_documents,):
                raise ValueError(f"{name} must have one entry per filing (config.n_documents = "
                                 f"{self.config.n_documents}), got shape {array.shape}")
            arrays[name] = array
        n_documents = self.config.n_documents
        document, sentence, position = arrays["document"], arrays["sentence"], arrays["position"]
        # filings are stored one after another, none empty: 0, ..., 0, 1, ..., n_documents - 1
        steps = np.diff(document)
        if document[0] != 0 or document[-1] != n_documents - 1 or np.any((steps != 0) & (steps != 1)):
            raise ValueError(f"document must run through the filings 0 .. {n_documents - 1} of tone and filer "
                             f"in order (steps of 0 or 1), got values from {int(document.min())} "
                             f"to {int(document.max())}")
        if sentence[0] < 0 or np.any(np.diff(sentence) < 0):
            raise ValueError("sentence must be non-negative and non-decreasing")
        first = np.concatenate([[0], np.flatnonzero(steps) + 1])
        if np.any(position != np.arange(n) - first[document]):
            raise ValueError("position must be each token's index inside its filing of document (0, 1, ...)")
        ranges = {"entity": (ENTITY_NONE, ENTITY_PRODUCT), "alias": (-1, len(COMPANIES) - 1),
                  "aspect": (-1, len(ASPECTS) - 1), "news": (-1, 1), "head": (-1, n - 1), "lexicon": (-1, 1),
                  "tone": (-1, 1), "filer": (0, len(COMPANIES) - 1), "mention": (-1, n - 1),
                  "mention_type": (-1, len(MENTION_TYPES) - 1)}
        for name, (low, high) in ranges.items():
            array = arrays[name]
            if array.size and (array.min() < low or array.max() > high):
                raise ValueError(f"{name} must hold values in [{low}, {high}], got values from "
                                 f"{int(array.min())} to {int(array.max())}")
        if np.any(arrays["tone"] == 0):
            raise ValueError("tone must be +1 or -1 for every filing")
        _check_mentions(arrays["mention"], arrays["mention_type"], sentence)
        for name, array in arrays.items():
            object.__setattr__(self, name, array)

    @property
    def n_documents(self) -> int:
        """Number of filings."""
        return int(self.tone.shape[0])

    @property
    def n_tokens(self) -> int:
        """Number of tokens, ``[SEP]`` included."""
        return int(self.tokens.shape[0])

    def document_bounds(self) -> np.ndarray:
        """Shape ``(n_documents + 1,)``: filing ``d`` is ``tokens[bounds[d]:bounds[d + 1]]``."""
        return np.searchsorted(self.document, np.arange(self.n_documents + 1), side="left")


def _check_mentions(mention: np.ndarray, mention_type: np.ndarray, sentence: np.ndarray) -> None:
    """Mentions are numbered in order, consecutive, typed throughout and inside one sentence."""
    inside = mention >= 0
    if np.any(inside != (mention_type >= 0)):
        raise ValueError("mention and mention_type must be -1 on the same tokens")
    ids, types, where = mention[inside], mention_type[inside], np.flatnonzero(inside)
    if not ids.size:
        return
    steps = np.diff(ids)
    if ids[0] != 0 or np.any((steps != 0) & (steps != 1)):
        raise ValueError("mention must number the mentions 0, 1, ... in order of appearance")
    same = steps == 0
    if np.any(same & (np.diff(where) != 1)) or np.any(same & (np.diff(types) != 0)) or np.any(
            same & (np.diff(sentence[where]) != 0)):
        raise ValueError("a mention's tokens must be consecutive, of one mention_type and in one sentence")


def _pool(heads, tails, size, rng):
    names = np.array([h + t for h in heads for t in tails])
    return names[rng.permutation(names.shape[0])[:size]]


def _zipf_weights(size, exponent):
    weights = (np.arange(size) + 3.0) ** (-exponent)
    return weights / weights.sum()


class _Writer:
    """Accumulates one filing's tokens and annotations."""

    def __init__(self, company, tone, pools, config, rng):
        self.company, self.tone = company, tone
        self.pools, self.config, self.rng = pools, config, rng
        self.rows = []  # (word, sentence, entity, alias, aspect, news, head, lexicon, mention, mention_type)
        self.sentence = 0
        self.mentions = 0

    def _add(self, word, entity=ENTITY_NONE, alias=-1, aspect=-1, news=0, head=-1, lexicon=0, mention=None):
        # mention: a MENTION_TYPES name; the words of one mention are added by one call of _mention
        if mention is None:
            self.rows.append((word, self.sentence, entity, alias, aspect, news, head, lexicon, -1, -1))
        else:
            self.rows.append((word, self.sentence, entity, alias, aspect, news, head, lexicon, self.mentions - 1,
                              MENTION_TYPES.index(mention)))

    def _mention(self, kind, words):
        """Add the (word, entity, alias) triples of one mention of type ``kind``."""
        self.mentions += 1
        for word, entity, alias in words:
            self._add(word, entity, alias, mention=kind)

    def _choice(self, items):
        return items[int(self.rng.integers(len(items)))]

    def _pooled(self, pool):
        """A name drawn from one of the generated Zipf-weighted pools ("place" or "person")."""
        names, weights = self.pools[pool]
        return str(names[self.rng.choice(names.shape[0], p=weights)])

    def _lexicon_word(self):
        agrees = self.rng.random() < self.config.lexicon_tone_agreement
        polarity = self.tone if agrees else -self.tone
        return self._choice(_POSITIVE_LEX if polarity > 0 else _NEGATIVE_LEX)

    def sentence_from(self, template, product_owner=None):
        """Fill ``template``; return nothing (rows are appended)."""
        rng, company = self.rng, COMPANIES[self.company]
        aspect_id = int(rng.integers(len(ASPECTS))) if "{ASP}" in template else -1
        aspect_head, previous_polarity = -1, 0
        for slot in template:
            if slot == "{FULL}":
                self._mention("ORG", [(company.alias, ENTITY_ORG, self.company), (company.noun, ENTITY_NONE, -1),
                                      (company.suffix, ENTITY_NONE, -1)])
            elif slot == "{ORG}":
                self._mention("ORG", [(company.alias, ENTITY_ORG, self.company)])
            elif slot == "{PROD}":
                owner = COMPANIES[product_owner]
                self._add("the")
                self._mention("PRODUCT", [(owner.alias, ENTITY_PRODUCT, product_owner), (owner.noun, ENTITY_NONE, -1)])
            elif slot == "{NOUNS}":
                self._add(company.plural)
            elif slot == "{ASP}":
                for word in ASPECTS[aspect_id].words:
                    self._add(word, aspect=aspect_id)
                aspect_head = len(self.rows) - 1
            elif slot in ("{DIR}", "{VERB}"):
                words = DIRECTION_WORDS if slot == "{DIR}" else EVALUATIVE_VERBS
                self._add(self._choice(words), news=ASPECTS[aspect_id].polarity, head=aspect_head)
            elif slot == "{LEX}":
                word = self._lexicon_word()
                self._add(word, lexicon=LEXICON[word])
                previous_polarity = LEXICON[word]
            elif slot == "{LEXOPP}":
                word = self._choice(_NEGATIVE_LEX if previous_polarity > 0 else _POSITIVE_LEX)
                self._add(word, lexicon=LEXICON[word])
            elif slot == "{SEED}":
                agrees = rng.random() < self.config.seed_tone_agreement
                positive = (self.tone > 0) == agrees
                self._add(self._choice(POSITIVE_SEEDS if positive else NEGATIVE_SEEDS))
            elif slot == "{COUNTRY}":
                self._mention("LOC", [(self._choice(_COUNTRIES), ENTITY_NONE, -1)])
            elif slot in _WORD_SLOTS:
                self._add(self._choice(_WORD_SLOTS[slot]))
            elif slot in _PHRASE_SLOTS:
                for word in self._choice(_PHRASE_SLOTS[slot]):
                    self._add(word)
            elif slot == "{NUM}":
                self._add(str(int(rng.integers(1, 41))))
            elif slot == "{AMT}":
                self._add(str(int(rng.integers(10, 1000))))
            elif slot == "{YEAR}":
                self._add(str(int(rng.integers(2004, 2020))))
            elif slot == "{PLACE}":
                self._mention("LOC", [(self._pooled("place"), ENTITY_NONE, -1)])
            elif slot == "{PERSON}":
                first = self._choice(_FIRST_NAMES)
                self._mention("PERSON", [(first, ENTITY_NONE, -1), (self._pooled("person"), ENTITY_NONE, -1)])
            elif slot.startswith("{"):
                raise ValueError(f"unknown template slot {slot}")
            else:
                self._add(slot)
        self.sentence += 1

    def write(self):
        rng, config = self.rng, self.config
        plan = [_DIRECTION_SENTENCES] * int(rng.poisson(config.direction_rate))
        verbs = _VERB_SENTENCES if config.verb_placement == "book" else _ADJACENT_VERB_SENTENCES
        plan += [verbs] * int(rng.poisson(config.verb_rate))
        for _ in range(int(rng.poisson(config.lexicon_rate))):
            if rng.random() < config.two_lexicon_share:
                plan.append(_LEXICON_CONTRAST if rng.random() < config.contrast_share else _LEXICON_TWO)
            else:
                plan.append(_LEXICON_ONE)
        plan += [_ORG_SENTENCES] * int(rng.poisson(config.org_rate))
        plan += [_FILLER_SENTENCES] * int(rng.poisson(config.filler_rate))
        plan.append(_TONE_SENTENCES)
        order = rng.permutation(len(plan))
        self.sentence_from(self._choice(_OPENINGS))
        self.sentence_from(self._choice(_INTROS))
        for index in order:
            self.sentence_from(self._choice(plan[index]))
        if rng.random() < config.closing_product_rate:
            kestrel = self.company == 0 or rng.random() < config.kestrel_product_share
            self.sentence_from(self._choice(_CLOSINGS), product_owner=0 if kestrel else self.company)
        return self.rows


def generate_corpus(config: CorpusConfig, rng: np.random.Generator) -> Corpus:
    """Generate the filings of ``config`` with the randomness of ``rng``.

    Parameters
    ----------
    config : CorpusConfig
        Generator settings; ``CorpusConfig()`` is the book's corpus.
    rng : numpy.random.Generator
        Source of all randomness. The same seed gives a byte-identical corpus.

    Returns
    -------
    Corpus
        The token stream, ``[SEP]`` between the sentences of a filing, with annotations.

    Raises
    ------
    ValueError
        If ``n_documents`` is below 1 (checked by [`CorpusConfig`][mlm_book.finance.corpus.CorpusConfig]).
    TypeError
        If ``config`` is not a [`CorpusConfig`][mlm_book.finance.corpus.CorpusConfig] or ``rng`` not a Generator.

    Examples
    --------
    >>> import numpy as np
    >>> a = generate_corpus(CorpusConfig(n_documents=2), np.random.default_rng(1))
    >>> b = generate_corpus(CorpusConfig(n_documents=2), np.random.default_rng(1))
    >>> corpus_fingerprint(a) == corpus_fingerprint(b)
    True
    """
    if not isinstance(config, CorpusConfig):
        raise TypeError(f"config must be a CorpusConfig, got {type(config).__name__}")
    check_generator(rng)
    kestrel_filings = int(round(config.kestrel_share * config.n_documents))
    others = config.n_documents - kestrel_filings
    filer = np.concatenate([np.zeros(kestrel_filings, dtype=np.int64),
                            1 + np.arange(others) % (len(COMPANIES) - 1)])
    filer = filer[rng.permutation(config.n_documents)]
    tone = np.where(rng.random(config.n_documents) < 0.5, 1, -1).astype(np.int64)
    pools = {
        "place": (_pool(_PLACE_HEADS, _PLACE_TAILS, config.place_pool, rng),
                  _zipf_weights(config.place_pool, config.zipf_exponent)),
        "person": (_pool(_PERSON_HEADS, _PERSON_TAILS, config.person_pool, rng),
                   _zipf_weights(config.person_pool, config.zipf_exponent)),
    }
    rows, document, sentence, position = [], [], [], []
    sentence_offset = mention_offset = 0
    for d in range(config.n_documents):
        writer = _Writer(int(filer[d]), int(tone[d]), pools, config, rng)
        doc_rows = writer.write()
        offset = len(rows)
        last = doc_rows[0][1]
        for row in doc_rows:
            if row[1] != last:  # a new sentence starts: close the previous one with [SEP]
                rows.append((SEP, last, ENTITY_NONE, -1, -1, 0, -1, 0, -1, -1))
                last = row[1]
            head = row[6]
            mention = row[8] + mention_offset if row[8] >= 0 else -1
            rows.append(row[:6] + ((head + offset + _seps_before(doc_rows, head)) if head >= 0 else -1,)
                        + (row[7], mention, row[9]))
        mention_offset += writer.mentions
        n = len(rows) - offset
        document.append(np.full(n, d))
        sentence.append(np.array([row[1] for row in rows[offset:]]) + sentence_offset)
        position.append(np.arange(n))
        sentence_offset += doc_rows[-1][1] + 1
    columns = list(zip(*rows))
    as_int = lambda values: np.asarray(values, dtype=np.int64)  # noqa: E731
    return Corpus(
        tokens=np.asarray(columns[0], dtype=str),
        document=np.concatenate(document).astype(np.int64),
        sentence=np.concatenate(sentence).astype(np.int64),
        position=np.concatenate(position).astype(np.int64),
        entity=as_int(columns[2]), alias=as_int(columns[3]), aspect=as_int(columns[4]),
        news=as_int(columns[5]), head=as_int(columns[6]), lexicon=as_int(columns[7]),
        mention=as_int(columns[8]), mention_type=as_int(columns[9]), tone=tone, filer=filer.astype(np.int64), config=config,
    )


def _seps_before(doc_rows, index):
    """Number of [SEP] inserted before row ``index`` of a filing (= its sentence number)."""
    return doc_rows[index][1] - doc_rows[0][1]


def render_document(corpus: Corpus, document: int, *, annotate: bool = True) -> str:
    """One filing as text, a sentence a line, gold labels in brackets after annotated words.

    Alias tokens show ``[ORG]`` / ``[PRODUCT]``; direction words and verbs ``[+]`` / ``[-]``
    (the news they report); lexicon words ``{+}`` / ``{-}``.

    Raises
    ------
    TypeError
        If ``corpus`` is not a `Corpus` or ``document`` not an integer.
    ValueError
        If ``document`` is negative or not below the number of filings.

    Examples
    --------
    >>> import numpy as np
    >>> corpus = generate_corpus(CorpusConfig(n_documents=1), np.random.default_rng(0))
    >>> "[ORG]" in render_document(corpus, 0)
    True
    """
    check_instance(corpus, "corpus", Corpus)
    check_positive_int(document, "document", minimum=0)
    if document >= corpus.n_documents:
        raise ValueError(f"document must be below n_documents = {corpus.n_documents}, got {document}")
    start, stop = corpus.document_bounds()[document:document + 2]
    lines, words = [], []
    for i in range(start, stop):
        word = str(corpus.tokens[i])
        if word == SEP:
            lines.append(" ".join(words))
            words = []
            continue
        if annotate and corpus.entity[i]:
            word += "[ORG]" if corpus.entity[i] == ENTITY_ORG else "[PRODUCT]"
        if annotate and corpus.news[i]:
            word += "[+]" if corpus.news[i] > 0 else "[-]"
        if annotate and corpus.lexicon[i]:
            word += "{+}" if corpus.lexicon[i] > 0 else "{-}"
        words.append(word)
    lines.append(" ".join(words))
    return "\n".join(lines)


def corpus_fingerprint(corpus: Corpus) -> str:
    """SHA-256 of the corpus text and every annotation array: equal iff byte-identical.

    Raises
    ------
    TypeError
        If ``corpus`` is not a `Corpus`.

    Examples
    --------
    >>> import numpy as np
    >>> len(corpus_fingerprint(generate_corpus(CorpusConfig(n_documents=1), np.random.default_rng(0))))
    64
    """
    check_instance(corpus, "corpus", Corpus)
    digest = hashlib.sha256(" ".join(corpus.tokens.tolist()).encode())
    for name in ("document", "sentence", "position", "entity", "alias", "aspect", "news", "head",
                 "lexicon", "mention", "mention_type", "tone", "filer"):
        digest.update(name.encode())
        digest.update(np.ascontiguousarray(getattr(corpus, name), dtype="<i8").tobytes())
    return digest.hexdigest()


def mention_spans(corpus: Corpus) -> list[list[tuple[int, int, str]]]:
    """The gold mentions of every sentence as spans ``(start, end, type)`` (``end`` exclusive).

    Offsets count the sentence's words, its closing ``[SEP]`` excluded: the span format of
    [`mlm_book.tagging`][mlm_book.tagging]. One list per sentence, in corpus order.

    Raises
    ------
    TypeError
        If ``corpus`` is not a `Corpus`.

    Examples
    --------
    >>> import numpy as np
    >>> corpus = generate_corpus(CorpusConfig(n_documents=1), np.random.default_rng(0))
    >>> spans = mention_spans(corpus)
    >>> words = [w for w in corpus.tokens[corpus.sentence == 0] if w != SEP]
    >>> [(" ".join(words[a:b]), kind) for a, b, kind in spans[0]]
    [('osprey pump holdings', 'ORG')]
    """
    check_instance(corpus, "corpus", Corpus)
    real = corpus.tokens != SEP
    index = corpus.sentence - corpus.sentence.min()
    count = int(index.max()) + 1
    starts = np.concatenate([[0], np.cumsum(np.bincount(index[real], minlength=count))[:-1]])
    slot = np.full(corpus.n_tokens, -1)
    slot[real] = np.arange(int(real.sum())) - starts[index[real]]
    out: list[list[tuple[int, int, str]]] = [[] for _ in range(count)]
    inside = np.flatnonzero(corpus.mention >= 0)
    if inside.size:
        first = np.concatenate([[True], np.diff(corpus.mention[inside]) != 0])
        last = np.concatenate([first[1:], [True]])
        for a, b in zip(inside[first], inside[last]):
            out[int(index[a])].append((int(slot[a]), int(slot[b]) + 1, MENTION_TYPES[int(corpus.mention_type[a])]))
    return out
