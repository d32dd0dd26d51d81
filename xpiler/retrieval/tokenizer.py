"""A code-aware tokenizer for BM25 over manuals and queries.

Identifiers are kept whole *and* split into their words, so that a query naming an exact
intrinsic (``_mm512_dpbusd_epi32``) matches its section strongly, while a query using one of
its words (``dpbusd``) still matches:

    __bang_add            -> bang_add, bang, add
    _mm512_dpbusd_epi32   -> mm512_dpbusd_epi32, mm512, dpbusd, epi32
    threadIdx             -> threadidx, thread, idx
    GDRAM2NRAM            -> gdram2nram, gdram, nram

Everything is lower-cased; a few English stop words are dropped and a trailing plural ``s``
is removed from plain words, which are also kept as written ("barriers" gives barrier and
barriers, so it meets "barrier"; a lone "dpbusds" still differs from "dpbusd"). Parts of
identifiers are never stemmed. The same function serves the
index and the query side, which is all BM25 needs.
"""
from __future__ import annotations

import re

_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*|[0-9]+[A-Za-z0-9_]*")
# lower->upper boundaries (threadIdx), and UPPER runs before Capitalized words (HTTPServer).
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")
# an all-caps word glued to another by a digit, e.g. GDRAM2NRAM, NRAM2WRAM
_CAPS_DIGIT = re.compile(r"^([A-Z]{2,})[0-9]+([A-Z]{2,})$")

STOPWORDS = frozenset("""
a an the of to and or in on at by for from with as is are be been being it its this that these
those than then so such not no can may must will would should one two each every all any only
also into onto over under when where which while who whose what how do does done use used uses
using via per if else but there their them they we our you your i e g eg ie etc same other
""".split())


def _stem(word: str) -> str:
    if len(word) > 4 and word.isalpha() and word.endswith("s") and not word.endswith(("ss", "us", "is")):
        return word[:-1]
    return word


def _parts(core: str) -> list[str]:
    parts: list[str] = []
    for chunk in core.split("_"):
        if not chunk:
            continue
        m = _CAPS_DIGIT.match(chunk)
        if m:
            parts.extend([m.group(1), m.group(2)])
            continue
        parts.extend(p for p in _CAMEL.split(chunk) if p)
    return parts


def tokenize(text: str) -> list[str]:
    """Split text (prose, signatures or code) into BM25 terms."""
    out: list[str] = []
    for m in _IDENT.finditer(text):
        raw = m.group(0)
        core = raw.strip("_")
        if not core:
            continue
        whole = core.lower()
        parts = [p.lower() for p in _parts(core)]
        if len(parts) <= 1:
            if whole not in STOPWORDS:
                stem = _stem(whole)
                out.append(stem)
                if stem != whole:  # keep the exact word too: `dpbusds` is not a plural
                    out.append(whole)
            continue
        out.append(whole)
        # parts of an identifier are code: never stemmed (dpbusds != dpbusd)
        out.extend(p for p in parts if p not in STOPWORDS)
    return out
