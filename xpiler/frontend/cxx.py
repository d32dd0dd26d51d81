"""C++ spellings common in kernels written as C++, rewritten into the C the dialect layer takes.

Runs on the dialect layer's tokens after macro expansion and before ``_Layer.rewrite``; every
token it handles is marked ``done`` so ``rewrite`` leaves it alone.  Lines never move.

* ``namespace N { ... }`` / ``namespace { ... }``: the braces go, ``N::name`` becomes ``name``;
  functions of an anonymous namespace are file-local helpers (like ``static``).
* references: a ``const T& p`` parameter becomes ``const T p`` (by value: it is only read);
  a ``T& p`` parameter becomes ``T* p`` with every use ``(*p)`` and every call site passing
  ``&(arg)``; a local ``T& r = e;`` becomes ``T* r = &(e);`` with uses ``(*r)``.
  ``T&&`` and functions returning references stay refused (XP1105).
* ``auto x = e`` becomes the placeholder type ``__xp_auto``; lower.py gives the declaration the
  type of ``e`` (XP1141 when it cannot).
* ``std::f(`` becomes ``__xpstd_f(``: lower.py picks the C spelling from the argument types
  (``std::exp(float)`` -> ``expf``, ``std::max(float, float)`` -> ``fmaxf``...).
* ``template <int N, ...>`` functions instantiated with one set of constant arguments in the
  file (``k<256><<<...>>>``, ``k<kBlock>(...)`` with ``constexpr int kBlock = 256``, or the
  parameters' defaults) become plain functions with the values substituted; anything else is
  XP1140 with what was found.
"""
from __future__ import annotations

import re

AUTO = "__xp_auto"
STD_PREFIX = "__xpstd_"


class _Toks:
    """The significant tokens (no whitespace, comments, # lines) of a layer, with helpers."""

    def __init__(self, layer):
        self.layer = layer
        self.S = [t for t in layer.toks if t.kind not in ("ws", "lcom", "bcom", "pp")]

    def text(self, i):
        return self.S[i].text if 0 <= i < len(self.S) else None

    def kind(self, i):
        return self.S[i].kind if 0 <= i < len(self.S) else None

    def match(self, i, open_, close):
        depth = 0
        for j in range(i, len(self.S)):
            if self.S[j].kind == "punct":
                if self.S[j].text == open_:
                    depth += 1
                elif self.S[j].text == close:
                    depth -= 1
                    if depth == 0:
                        return j
        raise self.layer.err("XP1107", self.S[i], token=open_)

    def match_angle(self, i):
        depth = 0
        for j in range(i, len(self.S)):
            tx = self.S[j].text
            if tx == "<":
                depth += 1
            elif tx == ">":
                depth -= 1
            elif tx == ">>":
                depth -= 2
            elif tx in (";", "{", "}"):
                break
            if depth <= 0:
                return j
        raise self.layer.err("XP1107", self.S[i], token="<")

    def set(self, i, out):
        self.S[i].out = out
        self.S[i].done = True

    def blank(self, a, b):
        for j in range(a, b + 1):
            self.set(j, "")


def rewrite_cxx(layer) -> None:
    T = _Toks(layer)
    _templates(layer, T)
    _namespaces(layer, T)
    _references(layer, T)
    _auto_and_std(layer, T)


# ------------------------------------------------------------------------------ namespaces
def _namespaces(layer, T):
    S = T.S
    names = set()
    for i, t in enumerate(S):
        if t.kind == "id" and t.text == "namespace" and T.text(i - 1) != "using" and not getattr(t, "done", False):
            j = i + 1
            name = None
            if T.kind(j) == "id":
                name = T.text(j)
                j += 1
            if T.text(j) != "{":
                continue   # namespace alias or something else: left to rewrite() (refused there)
            close = T.match(j, "{", "}")
            T.blank(i, j)
            T.set(close, "")
            if name:
                names.add(name)
            else:
                layer.internal_ranges.append((t.line, S[close].line))
    for i, t in enumerate(S):
        if t.kind == "id" and t.text in names and T.text(i + 1) == "::":
            T.blank(i, i + 1)


# ------------------------------------------------------------------------------ references
def _param_lists(T):
    """(name index, '(' index, ')' index, '{' or ';' index) of each function declarator at file
    scope (brace depth 0)."""
    S = T.S
    out = []
    depth = 0
    extern_c = []
    i = 0
    while i < len(S):
        t = S[i]
        if t.kind == "punct" and t.text == "{" and t.out != "":
            if T.text(i - 1) in ('"C"', '"C++"'):      # extern "C" { ... }: still file scope
                extern_c.append(depth)
            else:
                depth += 1
        elif t.kind == "punct" and t.text == "}" and t.out != "":
            if extern_c and extern_c[-1] == depth:
                extern_c.pop()
            else:
                depth -= 1
        elif depth == 0 and t.kind == "id" and T.text(i + 1) == "(" and t.text not in (
                "__attribute__", "__launch_bounds__", "__align__", "alignas", "__declspec", "sizeof", "if", "for",
                "while", "switch", "return"):
            close = T.match(i + 1, "(", ")")
            k = close + 1
            while k < len(S) and (S[k].out == "" or S[k].text in ("const", "noexcept", "override")):
                k += 1
            if T.text(k) in ("{", ";"):
                out.append((i, i + 1, close, k))
                i = k if T.text(k) == ";" else i + 1
                continue
        i += 1
    return out


def _split_params(T, a, b):
    """Index ranges of the comma-separated parameters between '(' a and ')' b."""
    parts, start, depth = [], a + 1, 0
    for j in range(a + 1, b):
        tx = T.text(j)
        if tx in ("(", "[", "<"):
            depth += 1
        elif tx in (")", "]", ">"):
            depth -= 1
        elif tx == "," and depth == 0:
            parts.append((start, j - 1))
            start = j + 1
    if start <= b - 1:
        parts.append((start, b - 1))
    return parts


def _body_range(T, brace):
    return brace, T.match(brace, "{", "}")


def _deref_uses(T, name, a, b, skip=()):
    S = T.S
    for j in range(a, b + 1):
        if j in skip:
            continue
        t = S[j]
        if t.kind == "id" and t.text == name and t.out is None and T.text(j - 1) not in (".", "->", "::"):
            T.set(j, f"(*{name})")


def _references(layer, T):
    S = T.S
    by_ref: dict[str, list[int]] = {}     # function -> positions of its non-const reference parameters
    for name_i, lp, rp, end in _param_lists(T):
        fname = T.text(name_i)
        # a function returning a reference: `T& f(` (not handled)
        if T.text(name_i - 1) in ("&", "&&") and T.kind(name_i - 2) == "id":
            raise layer.err("XP1105", S[name_i - 1], name=fname)
        body = _body_range(T, end) if T.text(end) == "{" else None
        for pos, (a, b) in enumerate(_split_params(T, lp, rp)):
            amp = next((j for j in range(a, b + 1) if T.text(j) in ("&", "&&") and S[j].kind == "punct"), None)
            if amp is None:
                continue
            if T.text(amp) == "&&" or T.kind(amp + 1) != "id" or amp + 1 != b and T.text(amp + 2) != "=":
                raise layer.err("XP1105", S[amp], name=T.text(amp + 1) or "?")
            pname = T.text(amp + 1)
            is_const = any(T.text(j) == "const" for j in range(a, amp))
            if is_const:
                T.set(amp, "")             # read-only: by value
                continue
            T.set(amp, "*")
            by_ref.setdefault(fname, [])
            if pos not in by_ref[fname]:
                by_ref[fname].append(pos)
            if body is not None:
                _deref_uses(T, pname, body[0], body[1])
    # call sites of functions with reference parameters: pass the address
    if by_ref:
        decl_names = {name_i for name_i, *_ in _param_lists(T)}
        for i, t in enumerate(S):
            if t.kind == "id" and t.text in by_ref and T.text(i + 1) == "(" and i not in decl_names:
                rp = T.match(i + 1, "(", ")")
                for pos, (a, b) in enumerate(_split_params(T, i + 1, rp)):
                    if pos in by_ref[t.text]:
                        S[a].out = "&(" + S[a].o
                        S[a].done = True
                        S[b].out = S[b].o + ")"
                        S[b].done = True
    # local references: `T& r = e;` inside a body
    depth = 0
    stack = []
    for i, t in enumerate(S):
        if t.kind == "punct" and t.text == "{" and t.out != "":
            depth += 1
            stack.append(i)
        elif t.kind == "punct" and t.text == "}" and t.out != "":
            depth -= 1
            if stack:
                stack.pop()
        elif depth > 0 and t.kind == "punct" and t.text in ("&", "&&") and t.out is None \
                and T.kind(i + 1) == "id" and T.text(i + 2) == "=" and (
                    T.kind(i - 1) == "id" and T.text(i - 1) not in ("return",) or T.text(i - 1) in (">", "*")) \
                and T.text(_stmt_start(T, i)) not in ("return",) and _is_decl_head(T, i):
            if t.text == "&&":
                raise layer.err("XP1105", t, name=T.text(i + 1))
            name = T.text(i + 1)
            T.set(i, "*")
            semi = i + 3
            pd = 0
            while semi < len(S) and not (S[semi].text in (";", ",") and pd == 0):
                if S[semi].text in ("(", "[", "{"):
                    pd += 1
                elif S[semi].text in (")", "]", "}"):
                    pd -= 1
                semi += 1
            S[i + 2].out = "= &("
            S[i + 2].done = True
            S[semi - 1].out = S[semi - 1].o + ")"
            S[semi - 1].done = True
            end = T.match(stack[-1], "{", "}") if stack else len(S) - 1
            _deref_uses(T, name, semi, end)


def _stmt_start(T, i):
    j = i
    while j > 0 and T.text(j - 1) not in (";", "{", "}", "(", ")"):
        j -= 1
    return j


def _is_decl_head(T, i):
    """True when the tokens from the statement start to ``i`` look like a type (ids, ::, <>, *)."""
    j = _stmt_start(T, i)
    if j >= i:
        return False
    for k in range(j, i):
        tx = T.text(k)
        if T.kind(k) == "id":
            if tx in ("return", "if", "while", "for", "case", "else"):
                return False
        elif tx not in ("*", "<", ">", ",", "::") and T.S[k].out != "":
            return False
    return True


# ------------------------------------------------------------------------------ auto, std::
STD_CALLS = {"exp", "exp2", "log", "log2", "log10", "log1p", "expm1", "sqrt", "cbrt", "tanh", "sinh", "cosh", "sin",
             "cos", "tan", "atan", "atan2", "erf", "erfc", "pow", "abs", "fabs", "floor", "ceil", "round", "trunc",
             "fmax", "fmin", "fmod", "fma", "max", "min", "rint", "hypot", "copysign"}


def _auto_and_std(layer, T):
    S = T.S
    for i, t in enumerate(S):
        if t.kind != "id" or getattr(t, "done", False):
            continue
        if t.text == "auto":
            if T.text(i + 2) == "=" and T.text(i + 3) == "[":
                raise layer.err("XP1102", t, construct="auto type deduction (of a lambda)")
            T.set(i, AUTO)
            layer.user_types.add(AUTO)
        elif t.text == "std" and T.text(i + 1) == "::" and T.text(i + 2) in _CONTAINERS:
            # say what it is, instead of the parser's confusion further on (an 'unbalanced (')
            raise layer.err("XP1102", t, construct=f"std::{T.text(i + 2)} (a C++ library type; use a plain "
                                                   "array or pointer in the kernel)")
        elif t.text == "std" and T.text(i + 1) == "::" and T.text(i + 2) == "numeric_limits" \
                and _numeric_limit(T, i) is not None:
            end, const = _numeric_limit(T, i)
            T.set(i, const)
            T.blank(i + 1, end)
        elif t.text == "std" and T.text(i + 1) == "::" and T.kind(i + 2) == "id":
            T.blank(i, i + 1)
            if T.text(i + 2) in STD_CALLS and T.text(i + 3) == "(":
                T.set(i + 2, STD_PREFIX + T.text(i + 2))


_CONTAINERS = {"vector", "array", "string", "unique_ptr", "shared_ptr", "map", "unordered_map", "set",
               "unordered_set", "deque", "list", "pair", "tuple", "function", "span"}

# std::numeric_limits<T>::NAME() -> the C constant of <float.h>/<limits.h>/<math.h>
_LIMITS = {
    "float": {"max": "FLT_MAX", "min": "FLT_MIN", "lowest": "(-FLT_MAX)", "epsilon": "FLT_EPSILON",
              "infinity": "INFINITY", "quiet_NaN": "NAN"},
    "double": {"max": "DBL_MAX", "min": "DBL_MIN", "lowest": "(-DBL_MAX)", "epsilon": "DBL_EPSILON",
               "infinity": "((double)INFINITY)", "quiet_NaN": "((double)NAN)"},
    "int": {"max": "INT_MAX", "min": "INT_MIN", "lowest": "INT_MIN"},
    "int32_t": {"max": "INT_MAX", "min": "INT_MIN", "lowest": "INT_MIN"},
}


def _numeric_limit(T, i):
    """(index of the closing ')', constant) for `std :: numeric_limits < TYPE > :: NAME ( )` at i."""
    if T.text(i + 3) != "<" or T.text(i + 5) != ">" or T.text(i + 6) != "::":
        return None
    table = _LIMITS.get(T.text(i + 4))
    name = T.text(i + 7)
    if not table or name not in table or T.text(i + 8) != "(" or T.text(i + 9) != ")":
        return None
    return i + 9, table[name]


# ------------------------------------------------------------------------------ templates
_INT_WORDS = {"int", "unsigned", "long", "short", "size_t", "int32_t", "int64_t", "uint32_t", "bool", "char"}


def _constants(layer, T):
    """Integer constants the file defines: #define N 256, (static) const(expr) int N = 256."""
    vals = {}
    for mi in layer.macros:
        if mi.params is None and re.fullmatch(r"\(?\s*-?\d+[uUlL]*\s*\)?", mi.body.strip()):
            vals[mi.name] = str(int(re.sub(r"[^\d-]", "", mi.body)))
    S = T.S
    for i, t in enumerate(S):
        if t.kind == "id" and t.text in ("constexpr", "const") and T.kind(i + 1) == "id":
            j = i + 1
            while T.text(j) in _INT_WORDS or T.text(j) in ("static", "const", "constexpr"):
                j += 1
            if T.kind(j) == "id" and T.text(j + 1) == "=" and T.kind(j + 2) == "num" and T.text(j + 3) == ";":
                vals[T.text(j)] = re.sub(r"[uUlL]+$", "", T.text(j + 2))
    return vals


def _templates(layer, T):
    S = T.S
    consts = None
    i = 0
    while i < len(S):
        t = S[i]
        if not (t.kind == "id" and t.text == "template"):
            i += 1
            continue
        if T.text(i + 1) != "<":   # explicit instantiation `template void k<256>(...)`: dropped below
            i += 1
            continue
        close = T.match_angle(i + 1)
        params, defaults = [], {}
        for a, b in _split_params(T, i + 1, close):
            words = [T.text(j) for j in range(a, b + 1)]
            if "=" in words:
                e = words.index("=")
                defaults_val = " ".join(words[e + 1:])
                words = words[:e]
            else:
                defaults_val = None
            if not words or words[0] in ("typename", "class") or not all(
                    w in _INT_WORDS or w == words[-1] for w in words[:-1]):
                raise layer.err("XP1103", t) if words and words[0] in ("typename", "class") else layer.err("XP1140", t, name=_template_name(T, close) or "?",
                                detail="only integer template parameters are substituted; "
                                       f"'{' '.join(words)}' is a type parameter")
            params.append(words[-1])
            if defaults_val is not None:
                defaults[words[-1]] = defaults_val
        name_i = _template_name_index(T, close)
        if name_i is None:
            raise layer.err("XP1140", t, name="?", detail="a template that is not a function")
        fname = T.text(name_i)
        lp = name_i + 1
        rp = T.match(lp, "(", ")")
        k = rp + 1
        while T.text(k) not in ("{", ";") and k < len(S):
            k += 1
        end = T.match(k, "{", "}") if T.text(k) == "{" else k
        if consts is None:
            consts = _constants(layer, T)
        # every use fname<args> elsewhere in the file
        found, uses = set(), []
        for j, u in enumerate(S):
            if u.kind == "id" and u.text == fname and T.text(j + 1) == "<" and not (i <= j <= end):
                cl = T.match_angle(j + 1)
                args = [" ".join(T.text(x) for x in range(a, b + 1)) for a, b in _split_params(T, j + 1, cl)]
                vals = tuple(consts.get(x, x) for x in args)
                found.add(vals)
                uses.append((j, cl))
        if not found and len(defaults) == len(params):
            found.add(tuple(consts.get(defaults[p], defaults[p]) for p in params))
        if not found:   # nothing to substitute: a template as such
            raise layer.err("XP1103", t)
        if len(found) != 1:
            what = "no instantiation in this file" if not found else \
                "instantiations " + ", ".join("<" + ", ".join(v) + ">" for v in sorted(found))
            raise layer.err("XP1140", t, name=fname, detail=what)
        vals = next(iter(found))
        if len(vals) != len(params) or not all(re.fullmatch(r"-?\d+", v) for v in vals):
            raise layer.err("XP1140", t, name=fname,
                            detail="template arguments <" + ", ".join(vals) + "> are not integer constants")
        sub = dict(zip(params, vals))
        T.blank(i, close)
        for j in range(close + 1, end + 1):
            if S[j].kind == "id" and S[j].text in sub and T.text(j - 1) not in (".", "->"):
                T.set(j, sub[S[j].text])
        for j, cl in uses:
            T.blank(j + 1, cl)
            # an explicit instantiation `template ... k<..>(...);` is a declaration: drop it
            st = _stmt_start(T, j)
            if T.text(st) == "template":
                semi = j
                while T.text(semi) != ";":
                    semi += 1
                T.blank(st, semi)
        layer.template_args[fname] = vals
        i = close + 1


def _template_name_index(T, close):
    j = close + 1
    while j < len(T.S) and T.text(j) not in ("{", ";"):
        if T.kind(j) == "id" and T.text(j + 1) == "(" and T.text(j) not in (
                "__launch_bounds__", "__attribute__", "__align__", "alignas", "__declspec"):
            return j
        j += 1
    return None


def _template_name(T, close):
    j = _template_name_index(T, close)
    return T.text(j) if j is not None else None
