"""BM25 retrieval over the target manuals (``manuals/<target>/*.md``).

A migration step asks for the manual sections that matter to one pass on one target, given
the APIs and intrinsics present in the program (``query_for``); the section ids that come
back go into the provenance log and the sections' text into the LLM prompt.

    >>> from xpiler.retrieval import retrieve, query_for
    >>> [s.id for s in retrieve(query_for("tensorize", "c", ["_mm512_dpbusd_epi32"]), "c")]
"""
from .tokenizer import tokenize
from .corpus import Section, ManualError, load_manuals, load_section, parse_front_matter, manuals_root, TARGETS
from .bm25 import ManualIndex, default_index, retrieve, query_for, PASSES, normalize_pass

__all__ = [
    "tokenize", "Section", "ManualError", "load_manuals", "load_section", "parse_front_matter",
    "manuals_root", "TARGETS", "ManualIndex", "default_index", "retrieve", "query_for", "PASSES",
    "normalize_pass",
]
