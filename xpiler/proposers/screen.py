"""Defensive handling of an LLM answer: find the code, reject what is not a program, and check
that the requested pass actually happened. Pure text functions; no compiler is run here.

Order of the screens (the first that fails names the verdict):
  rejected_garbage    empty answer, or no function definition in it
  rejected_entry      the entry function is not defined
  rejected_parse      unbalanced brackets / unterminated comment or string, or the front end rejects it
  rejected_structure  the program is unchanged, or the pass's signature change is absent
"""
from __future__ import annotations

import re
from typing import Callable

LANG_TAGS = {
    "cuda": {"cuda", "cu", "cpp", "c++", "cxx", "c"},
    "hip": {"hip", "cpp", "c++", "cxx", "cuda", "c"},
    "bang": {"bang", "mlu", "c", "cpp", "c++", "cxx"},
    "c": {"c", "cpp", "c++", "cxx", "h"},
}
FENCE_LANG = {"cuda": "cuda", "hip": "hip", "bang": "c", "c": "c"}

_FENCE = re.compile(r"(?P<fence>```+|~~~+)[ \t]*(?P<tag>[A-Za-z0-9_+\-.]*)[^\n]*\n(?P<body>.*?)(?:\n(?P=fence)|\Z)", re.S)
_KEYWORDS = {"if", "for", "while", "switch", "return", "sizeof", "do", "else", "case"}
_FUNC_DEF = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)\s*\(([^;{}()]|\([^;{}()]*\))*\)\s*(?:const\s*)?\{")


def fenced_blocks(text: str) -> list[tuple[str, str]]:
    """[(language tag lower-cased, body)] of every fenced block; an unclosed last fence runs to the end."""
    return [(m.group("tag").lower(), m.group("body")) for m in _FENCE.finditer(text)]


def strip_comments_and_strings(src: str) -> tuple[str, str | None]:
    """Source with comments removed and string/char literals emptied; second item: an error or None."""
    out = []
    i, n = 0, len(src)
    while i < n:
        c = src[i]
        if c == "/" and i + 1 < n and src[i + 1] == "/":
            j = src.find("\n", i)
            i = n if j < 0 else j
        elif c == "/" and i + 1 < n and src[i + 1] == "*":
            j = src.find("*/", i + 2)
            if j < 0:
                return "".join(out), "unterminated comment"
            out.append(" ")
            i = j + 2
        elif c in "\"'":
            j = i + 1
            while j < n and src[j] != c:
                if src[j] == "\\":
                    j += 1
                elif src[j] == "\n":
                    return "".join(out), "unterminated string or character literal"
                j += 1
            if j >= n:
                return "".join(out), "unterminated string or character literal"
            out.append(c + c)
            i = j + 1
        else:
            out.append(c)
            i += 1
    return "".join(out), None


def bracket_error(code: str) -> str | None:
    """None when (), [] and {} nest properly (comments and strings ignored), else what is wrong."""
    clean, err = strip_comments_and_strings(code)
    if err:
        return err
    pairs = {")": "(", "]": "[", "}": "{"}
    stack: list[tuple[str, int]] = []
    line = 1
    for ch in clean:
        if ch == "\n":
            line += 1
        elif ch in "([{":
            stack.append((ch, line))
        elif ch in ")]}":
            if not stack or stack[-1][0] != pairs[ch]:
                return f"unbalanced '{ch}' at line {line}"
            stack.pop()
    if stack:
        ch, ln = stack[-1]
        return f"'{ch}' opened at line {ln} is never closed (truncated answer?)"
    return None


def defined_functions(code: str) -> list[str]:
    """Names of the functions the code defines (a name, a parameter list, then a body)."""
    clean, _ = strip_comments_and_strings(code)
    clean = re.sub(r"^\s*#.*$", "", clean, flags=re.M)  # preprocessor lines (macros look like calls)
    names = []
    for m in _FUNC_DEF.finditer(clean):
        name = m.group(1)
        if name in _KEYWORDS:
            continue
        names.append(name)
    return names


def extract_code(answer: str, dialect: str, entry: str | None) -> tuple[str | None, str]:
    """The program inside an answer: a fenced block in the right language (the one defining
    ``entry`` first), else any fenced block defining it, else the whole text. Returns
    (code or None, where it came from)."""
    text = (answer or "").strip()
    if not text:
        return None, "empty"
    tags = LANG_TAGS.get(dialect, LANG_TAGS["c"])
    blocks = fenced_blocks(text)

    def defines(body):
        fns = defined_functions(body)
        return (entry in fns) if entry else bool(fns)

    ranked = ([b for t, b in blocks if t in tags and defines(b)] + [b for t, b in blocks if defines(b)]
              + [b for t, b in blocks if t in tags])
    if ranked:
        return ranked[0].strip() + "\n", "fenced"
    if blocks:  # fences, but none holds a program
        body = max((b for _, b in blocks), key=len)
        return body.strip() + "\n", "fenced"
    return text + "\n", "whole"


def _count(pat: str, code: str) -> int:
    clean, _ = strip_comments_and_strings(code)
    return len(re.findall(pat, clean))


def _norm(code: str) -> str:
    clean, _ = strip_comments_and_strings(code)
    return re.sub(r"\s+", "", clean)


FOR = r"\bfor\s*\("
PARALLEL = {
    "cuda": r"\b(threadIdx|blockIdx|blockDim|gridDim)\b",
    "hip": r"\b(threadIdx|blockIdx|blockDim|gridDim|hipThreadIdx_[xyz]|hipBlockIdx_[xyz])\b",
    "bang": r"\b(taskId|coreId|clusterId|taskIdX|taskIdY|taskDim)\b",
    "c": r"#\s*pragma\s+omp\b",
}
ONCHIP = {
    "cuda": r"__shared__", "hip": r"__shared__",
    "bang": r"__nram__|__wram__|__mlu_shared__",
    "c": r"\b(float|int|int8_t|uint8_t|int16_t|int32_t|half|_Float16|double)\s+[A-Za-z_]\w*\s*\[[^\]]+\]\s*(\[[^\]]+\]\s*)*(;|=)",
}
TENSOR = {
    "cuda": r"\bwmma::(mma_sync|load_matrix_sync)\b|\bmma_sync\s*\(",
    "hip": r"__builtin_amdgcn_mfma_\w+",
    "bang": r"__bang_(matmul|mlp|conv|add|sub|mul|sumpool|maxpool|minpool|avgpool|active_\w+|\w+_scalar|\w+_const)\b",
    "c": r"_mm512_\w+|_mm256_\w+",
}


def _loop_headers(code: str) -> list[str]:
    clean, _ = strip_comments_and_strings(code)
    return [re.sub(r"\s+", "", m.group(1)) for m in re.finditer(r"\bfor\s*\(([^;]*;[^;]*;[^)]*)\)", clean)]


def pass_happened(pass_name: str, original: str, candidate: str, source: str, target: str) -> str | None:
    """None when the candidate shows the pass's signature change, else why not.

    Deliberately weak (text-level): it catches an unchanged program or a pass that plainly did
    not happen; the tests decide correctness. Pass modules can supply a stronger check through
    ``PassContext.structure_check``.
    """
    if _norm(original) == _norm(candidate):
        return "the program is unchanged: the pass did not happen"
    fo, fc = _count(FOR, original), _count(FOR, candidate)
    if pass_name == "loop_recovery":
        par = PARALLEL.get(source)
        if par and source != "c" and _count(par, candidate) > 0:
            return f"parallel builtins of {source} remain: loop recovery must turn them into loops"
        if fc <= fo:
            return "no loop was recovered (the number of for-loops did not grow)"
    elif pass_name == "binding":
        par = PARALLEL.get(target)
        if par and _count(par, candidate) == 0:
            return f"no {target} parallel index (or omp pragma) appears: nothing was bound"
    elif pass_name == "split":
        if fc <= fo:
            return "no loop was split (the number of for-loops did not grow)"
    elif pass_name == "fuse":
        if fc >= fo:
            return "no loops were fused (the number of for-loops did not shrink)"
    elif pass_name == "reorder":
        ho, hc = _loop_headers(original), _loop_headers(candidate)
        if len(hc) != len(ho):
            return "reorder changed the number of loops"
        if ho == hc:
            return "the loop order is unchanged"
    elif pass_name == "cache":
        pat = ONCHIP.get(target)
        if pat and _count(pat, candidate) <= _count(pat, original):
            return f"no new on-chip buffer for {target} was introduced"
    elif pass_name == "pipeline":
        pat = ONCHIP.get(target)
        if pat and _count(pat, candidate) == 0:
            return "no on-chip buffers to pipeline through"
    elif pass_name == "tensorize":
        pat = TENSOR.get(target)
        if pat and _count(pat, candidate) <= _count(pat, original):
            return f"no {target} matrix/vector intrinsic was introduced"
    elif pass_name == "detensorize":
        pat = TENSOR.get(source)
        if pat and _count(pat, candidate) >= max(1, _count(pat, original)):
            return f"the {source} intrinsics are still there"
    return None


def find_parser() -> Callable[[str, str], object] | None:
    """The front end's text parser if it is installed (tried names: parse_source, parse_text, parse)."""
    try:
        import xpiler.frontend as fe
    except Exception:
        return None
    for name in ("parse_source", "parse_text", "parse"):
        fn = getattr(fe, name, None)
        if callable(fn):
            return lambda text, dialect, _fn=fn: _fn(text, dialect=dialect)
    return None
