"""A program's identity: the key that names one candidate program for the tests, the timings, the
search's transposition table and the logs.

It is the SHA-256 (16 hex digits) of the printed program, extended by its launches when it has
any (:attr:`xpiler.ir.nodes.Program.launches`): the same kernel text on another grid (binding's
``regrid``) is another candidate. A program without launches is keyed by its text alone, so
logs keyed by the printed text's hash read the same. The form of the extension is the one the
provenance logs already hold (``text + "\\n/* launch " + JSON + " */"``), so keys logged before
the launch moved into the IR (``search_root``, ``untuned``, ``tuned``) are unchanged.
"""
from __future__ import annotations

import hashlib
import json


def text_hash(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def program_key(program, text: str) -> str:
    """The identity of ``program`` printed as ``text`` (see the module doc)."""
    launches = getattr(program, "launches", ())
    if not launches:
        return text_hash(text)
    if len(launches) == 1:
        canon = json.dumps(launches[0].as_dict(), sort_keys=True, default=str)
    else:
        canon = json.dumps({lc.kernel: lc.as_dict() for lc in launches}, sort_keys=True, default=str)
    return text_hash(text + "\n/* launch " + canon + " */")
