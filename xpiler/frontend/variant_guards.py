"""Our own outputs read back as sources: their compile-time variants resolve to the portable path.

An output of xpiler may carry compile-time variants (the contract: ``xpiler/verify/variants.py``):
a guard that defines ``XP_USE_<NAME>`` from what the compiler targets, and uses

    #if XP_USE_<NAME>
        <the path for hardware that has it: MFMA, AMX tiles>
    #else
        <the portable path>
    #endif

Users chain migrations (cuda -> hip, then hip -> bang), so such a file comes back as a source. The
front end drops preprocessor conditionals from the text it parses and keeps every branch, so both
paths would land in the IR one after the other: the passes would migrate an MFMA branch into a
target that has no MFMA and analyses would see two accumulations. Reading a user's file
(:func:`xpiler.frontend.parse_file`), each guard of the contract's shape is therefore resolved
before parsing to its ``#else`` branch, the path every target can express (a use without
``#else`` keeps nothing). A guard name xpiler does not print itself is resolved the same way: the
shape, not the name, says what it is. (docs/decisions.md, 2026-12-06 "variant guards read back")

Only the contract's shape is touched: the seven-line definition block
(``#ifndef N / #if .. / #define N 1 / #else / #define N 0 / #endif / #endif``, nothing else in it)
and ``#if N`` groups with at most an ``#else``, where N has such a definition in the file and
appears nowhere else outside comments. Any other ``#if`` of a user source is left as it was, and a
guard that does not fit (an ``#elif``, ``N`` used in code, a comment crossing the cut) is left whole.

The dropped lines are blanked, not deleted, so every kept token keeps its line and column and
diagnostics point into the file as the user has it. Each resolution is reported as the note
XP1150 (the migration's log and report carry it; ``xpiler parse`` prints it).

Internal text round trips (``parse_text``: passes that splice a variant into printed IR and parse
it back) keep both paths: they are building the variant, not reading a user's file.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from .dialect import tokenize

_NAME = r"XP_USE_[A-Z0-9_]+"
_WORD = re.compile(r"#\s*(\w*)\s*(.*)", re.S)
_CODE = ("id", "num", "punct", "str", "chr")


@dataclass(frozen=True)
class Resolution:
    """One ``#if XP_USE_<NAME>`` group read as its portable branch."""
    guard: str
    line: int                     # the #if line
    end_line: int                 # the #endif line
    kept: tuple | None            # (first, last) line of the #else branch kept; None: nothing kept

    def describe(self) -> str:
        a, z = self.kept or (0, -1)
        where = f"line {a}" if a == z else f"lines {a}-{z}"
        kept = f"its #else branch ({where})" if a <= z else ("its empty #else branch" if self.kept else
                                                             "nothing (no #else)")
        return f"#if {self.guard} at lines {self.line}-{self.end_line} kept {kept}"


def _directive(tok):
    """(word, argument) of a preprocessor token; comments and continuations taken out."""
    s = re.sub(r"/\*.*?\*/", " ", tok.text, flags=re.S)
    s = re.sub(r"//.*", "", s).replace("\\\n", " ")
    m = _WORD.match(s.strip())
    return (m.group(1), " ".join(m.group(2).split())) if m else ("", "")


def _end_line(tok) -> int:
    return tok.line + tok.text.count("\n")


def _groups(toks):
    """The conditional groups: dicts with 'open' (token index), 'word', 'arg', 'branches'
    [(word, index)], 'close' (index), 'parent'; None when the conditionals do not balance."""
    out, stack = [], []
    for i, t in enumerate(toks):
        if t.kind != "pp":
            continue
        word, arg = _directive(t)
        if word in ("if", "ifdef", "ifndef"):
            g = {"open": i, "word": word, "arg": arg, "branches": [], "close": None,
                 "parent": stack[-1] if stack else None}
            out.append(g)
            stack.append(g)
        elif word in ("elif", "else"):
            if not stack:
                return None
            stack[-1]["branches"].append((word, i))
        elif word == "endif":
            if not stack:
                return None
            stack.pop()["close"] = i
    return None if stack else out


def _definitions(toks, groups) -> dict:
    """guard name -> the definition group, for each block of the contract's exact shape."""
    found = {}
    for g in groups:
        name = g["arg"]
        if g["word"] != "ifndef" or not re.fullmatch(_NAME, name) or g["branches"]:
            continue
        inner = toks[g["open"]:g["close"] + 1]
        if any(t.kind in _CODE for t in inner):
            continue
        shape = [_directive(t) for t in inner if t.kind == "pp"]
        want = [("ifndef", name), ("if", None), ("define", f"{name} 1"), ("else", ""), ("define", f"{name} 0"),
                ("endif", ""), ("endif", "")]
        if len(shape) == len(want) and all(w == s[0] and (a is None or a == s[1]) for (w, a), s in zip(want, shape)):
            found.setdefault(name, g)
    return found


def resolve(text: str) -> tuple[str, list[Resolution]]:
    """``text`` with each variant guard of the contract's shape resolved to its portable branch
    (dropped lines blanked, line and column of every kept token unchanged), and what was done."""
    if "XP_USE_" not in text:
        return text, []
    toks = tokenize(text, "<variants>")
    groups = _groups(toks)
    if groups is None:          # unbalanced conditionals: the parser's diagnostics, as before
        return text, []
    defs = _definitions(toks, groups)
    uses = {n: [g for g in groups if g["word"] == "if" and g["arg"] == n] for n in defs}
    cuts: dict = {n: [(toks[g["open"]].line, _end_line(toks[g["close"]]))] for n, g in defs.items()}
    notes: dict = {n: [] for n in defs}
    for name, gs in uses.items():
        for g in gs:
            words = [w for w, _ in g["branches"]]
            if words not in ([], ["else"]):
                cuts[name] = None       # an #elif: not the contract's shape
                break
            first, end = toks[g["open"]].line, toks[g["close"]].line
            if words:
                els = toks[g["branches"][0][1]]
                cuts[name] += [(first, _end_line(els)), (end, _end_line(toks[g["close"]]))]
                kept = (_end_line(els) + 1, end - 1)
            else:
                cuts[name].append((first, _end_line(toks[g["close"]])))
                kept = None
            notes[name].append(Resolution(name, first, end, kept))
    # the name anywhere else (code, another directive) means the file does more with it than the
    # contract says: leave that guard alone
    for name in list(cuts):
        if cuts[name] is None:
            continue
        mine = {defs[name]["open"], defs[name]["close"]} | {g["open"] for g in uses[name]}
        lo, hi = defs[name]["open"], defs[name]["close"]
        for i, t in enumerate(toks):
            if lo <= i <= hi or i in mine:
                continue
            if (t.kind == "id" and t.text == name) or (t.kind == "pp" and re.search(rf"\b{name}\b", _directive(t)[1])):
                cuts[name] = None
                break
    blank: set = set()
    for name, spans in cuts.items():
        if spans is None:
            continue
        lines = {ln for a, b in spans for ln in range(a, b + 1)}
        # a token that crosses the edge of a dropped span (a block comment) cannot be cut in two
        if any(t.kind != "ws" and (t.line in lines) != (_end_line(t) in lines) for t in toks):
            notes[name] = []
            continue
        blank |= lines
    if not blank:
        return text, []
    out = [("" if i + 1 in blank else ln) for i, ln in enumerate(text.split("\n"))]
    done = [r for name in defs if cuts[name] is not None for r in notes[name]
            if r.line in blank and not _inside_dropped(r, notes, blank)]
    return "\n".join(out), sorted(done, key=lambda r: r.line)


def _inside_dropped(r: Resolution, notes: dict, blank: set) -> bool:
    """Whether ``r`` lies in a branch another resolution dropped (it went with that branch)."""
    for rs in notes.values():
        for o in rs:
            if o is r or not (o.line < r.line <= o.end_line):
                continue
            if o.kept is None or not (o.kept[0] <= r.line <= o.kept[1]):
                return True
    return False
