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

from .cxx_vector import lower_vectors

AUTO = "__xp_auto"
STD_PREFIX = "__xpstd_"
LAMBDA = "__xp_lambda_"          # `auto f = [&](..) {..};` -> `RET __xp_lambda_f(..); {..};` (lower.py lifts it)
CG_REDUCE = "__xp_cg_reduce_"     # __xp_cg_reduce_<add|max|min>_<tile size>(v): lower.py writes the helper


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
    _coop_groups(layer, T)
    _templates(layer, T)
    _namespaces(layer, T)
    _lambdas(layer, T)
    lower_vectors(layer, T)          # std::vector scratch buffers -> local arrays (cxx_vector.py)
    _structs_and_braces(layer, T)
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
            amp = next((j for j in range(a, b + 1) if T.text(j) in ("&", "&&") and S[j].kind == "punct"
                        and not S[j].done), None)
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
        elif t.text == "std" and T.text(i + 1) == "::" and T.text(i + 2) == "fill" and T.text(i + 3) == "(" \
                and _fill_loop(layer, T, i):
            continue
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
    """Monomorphize function templates: each template with one set of arguments in the file
    (explicit ``k<float>``/``k<256, 4>``, deduced from plain calls ``f(x)``, or the defaults)
    becomes a plain function with the arguments substituted in its tokens."""
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
        params, kinds, defaults = [], {}, {}
        for a, b in _split_params(T, i + 1, close):
            words = [T.text(j) for j in range(a, b + 1)]
            default = None
            if "=" in words:
                e = words.index("=")
                default = " ".join(words[e + 1:])
                words = words[:e]
            if len(words) == 2 and words[0] in ("typename", "class"):
                kinds[words[1]] = "type"
            elif words and all(w in _INT_WORDS or w == words[-1] for w in words[:-1]) and len(words) >= 2:
                kinds[words[-1]] = "value"
            else:
                raise layer.err("XP1140", t, name=_template_name(T, close) or "?",
                                detail=f"template parameter '{' '.join(words)}' is neither a type "
                                       "(typename T) nor an integer (int N)")
            params.append(words[-1])
            if default is not None:
                defaults[words[-1]] = default
        name_i = _template_name_index(T, close)
        if name_i is None:
            raise layer.err("XP1140", t, name="?", detail="a template that is not a function (class/struct "
                                                          "templates are not read)")
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
        found, uses, where = set(), [], {}
        for j, u in enumerate(S):
            if u.kind == "id" and u.text == fname and T.text(j + 1) == "<" and not (i <= j <= end):
                cl = T.match_angle(j + 1)
                args = [" ".join(T.text(x) for x in range(a, b + 1)) for a, b in _split_params(T, j + 1, cl)]
                args += [defaults[p] for p in params[len(args):] if p in defaults]
                vals = tuple(consts.get(x, x) if kinds.get(p) == "value" else x for p, x in zip(params, args))
                found.add(vals)
                where.setdefault(vals, u.line)
                uses.append((j, cl))
        if not found and any(kinds[p] == "type" and p not in defaults for p in params):
            deduced = _deduce_calls(layer, T, fname, kinds, params, lp, rp, i, end)
            for vals, line in deduced:
                vals = tuple(v if v is not None else defaults.get(p) for p, v in zip(params, vals))
                if any(v is None for v in vals):
                    missing = [p for p, v in zip(params, vals) if v is None]
                    raise layer.err("XP1140", S[i], name=fname,
                                    detail=f"the call on line {line} does not tell {', '.join(missing)}; "
                                           f"write {fname}<...>(...) with the arguments")
                found.add(vals)
                where.setdefault(vals, line)
        if not found and len(defaults) == len(params):
            found.add(tuple(consts.get(defaults[p], defaults[p]) if kinds[p] == "value" else defaults[p]
                            for p in params))
        if not found:   # nothing to substitute: a template as such
            raise layer.err("XP1103", t)
        if len(found) != 1:
            what = "instantiations " + ", ".join("<" + ", ".join(v) + ">" for v in sorted(found)) + \
                " (lines " + ", ".join(str(where.get(v, "?")) for v in sorted(found)) + ")"
            raise layer.err("XP1140", t, name=fname,
                            detail=what + "; one function per instantiation is not generated: keep one, or "
                                          "write a plain function for each")
        vals = next(iter(found))
        if len(vals) != len(params):
            raise layer.err("XP1140", t, name=fname,
                            detail=f"{len(params)} template parameters, {len(vals)} arguments <" + ", ".join(vals) + ">")
        for p, v in zip(params, vals):
            if kinds[p] == "value" and not re.fullmatch(r"-?\d+", v):
                raise layer.err("XP1140", t, name=fname,
                                detail="template arguments <" + ", ".join(vals) + "> are not integer constants")
            if kinds[p] == "type" and not re.fullmatch(r"(const\s+)?[A-Za-z_]\w*(\s+[A-Za-z_]\w*)*(\s*\*)*", v):
                raise layer.err("XP1140", t, name=fname, detail=f"type argument '{v}' for {p} is not a plain type")
        sub = dict(zip(params, vals))
        T.blank(i, close)
        for j in range(close + 1, end + 1):
            if S[j].kind == "id" and S[j].text in sub and T.text(j - 1) not in (".", "->", "::") \
                    and not getattr(S[j], "done", False):
                v = sub[S[j].text]
                if kinds[S[j].text] == "type" and re.fullmatch(r"[A-Za-z_]\w*", v):
                    S[j].text = v      # a one-word type: later passes see it as written (T(0) is a cast)
                elif kinds[S[j].text] == "type" and T.text(j + 1) == "(":
                    T.set(j, f"({v})")
                else:
                    T.set(j, v)
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


def _literal_type(tx):
    low = tx.lower()
    if low.startswith("0x"):
        return "unsigned" if "u" in low[2:].rstrip("0123456789abcdef") else "int"
    if "." in low or "e" in low:
        return "float" if low.endswith("f") else "double"
    suf = low.lstrip("0123456789")
    return {"": "int", "u": "unsigned", "l": "long", "ul": "unsigned long", "lu": "unsigned long",
            "ll": "long long", "ull": "unsigned long long"}.get(suf)


_TYPE_WORDS = {"void", "char", "short", "int", "long", "float", "double", "signed", "unsigned", "bool", "half",
               "__half", "size_t", "int8_t", "uint8_t", "int16_t", "uint16_t", "int32_t", "uint32_t", "int64_t",
               "uint64_t", "__nv_bfloat16", "_Float16", "float2", "float4", "half2", "__half2", "const",
               "volatile", "std"}


def _decl_type(T, name, before, lo=0):
    """(base type words, pointer depth) of the nearest declaration of ``name`` before token
    ``before`` (a local, a parameter or a global), or None."""
    for j in range(before - 1, lo - 1, -1):
        if not (T.kind(j) == "id" and T.text(j) == name and T.text(j + 1) in ("=", ";", ",", "[", ")", "{")):
            continue
        stars, k = 0, j - 1
        while T.text(k) in ("*", "__restrict__", "__restrict", "restrict", "const"):
            stars += T.text(k) == "*"
            k -= 1
        if T.text(k) == ",":          # `float a = 0, b;`: the type starts the statement
            k = k - 1
            while k >= lo and T.text(k) not in (";", "{", "}", "(") :
                k -= 1
            words, m = [], k + 1
            while T.kind(m) == "id" and T.text(m) in _TYPE_WORDS | {"::"}:
                words.append(T.text(m))
                m += 1
        else:
            words = []
            while T.kind(k) == "id" and T.text(k) in _TYPE_WORDS:
                words.insert(0, T.text(k))
                k -= 1
        words = [w for w in words if w not in ("const", "volatile", "std")]
        if not words:
            continue
        if T.text(j + 1) == "[":
            stars += 1
        return " ".join(words), stars
    return None


def _deduce_calls(layer, T, fname, kinds, params, lp, rp, tstart, tend):
    """Template arguments deduced from the plain calls ``fname(args)`` outside the template:
    [(values, line)], a value None where no parameter tells it. Only parameters written
    ``T``, ``const T`` or ``T*`` with arguments that are literals, variables or ``p[i]``."""
    S = T.S
    slots = []     # (parameter position, template parameter, pointer depth)
    for pos, (a, b) in enumerate(_split_params(T, lp, rp)):
        words = [T.text(j) for j in range(a, b + 1)]
        tps = [w for w in words if w in kinds and kinds[w] == "type"]
        if len(tps) == 1:
            slots.append((pos, tps[0], words.count("*")))
    out = []
    for j, u in enumerate(S):
        if not (u.kind == "id" and u.text == fname and T.text(j + 1) == "(" and not (tstart <= j <= tend)
                and T.text(j - 1) not in (".", "->")):
            continue
        cl = T.match(j + 1, "(", ")")
        args = _split_params(T, j + 1, cl)
        vals = {}
        for pos, tp, pstars in slots:
            if pos >= len(args):
                continue
            a, b = args[pos]
            ty = None
            if a == b and T.kind(a) == "num":
                ty = (_literal_type(T.text(a)), 0)
            elif T.kind(a) == "id" and (a == b or T.text(a + 1) == "[" and T.match(a + 1, "[", "]") == b):
                d = _decl_type(T, T.text(a), j)
                if d is not None:
                    ty = (d[0], d[1] - (1 if a != b else 0))
            if ty is None or ty[0] is None or ty[1] < pstars:
                raise layer.err("XP1140", u, name=fname,
                                detail=f"cannot deduce {tp} from argument {pos + 1} of this call; write "
                                       f"{fname}<...>(...) with the template arguments")
            got = ty[0] + " *" * (ty[1] - pstars)
            if vals.get(tp, got) != got:
                raise layer.err("XP1140", u, name=fname, detail=f"{tp} deduced as both {vals[tp]} and {got}")
            vals[tp] = got
        out.append((tuple(vals.get(p) for p in params), u.line))
    return out


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


# ------------------------------------------------------------------------------ cooperative groups
CG_NS = "cooperative_groups"
_CG_OPS = {"plus": "add", "greater": "max", "less": "min"}
_CG_TILE_SIZES = (1, 2, 4, 8, 16, 32)


def _coop_groups(layer, T):
    """The subset of cooperative groups that is plain CUDA: ``this_thread_block()`` and
    ``tiled_partition<S>(block)`` bound to local variables, their ``sync``/``thread_rank``/
    ``size``/``meta_group_*``/``shfl*`` members, ``cg::sync(g)`` and ``cg::reduce(tile, v,
    cg::plus|greater|less<T>())``. Each group variable's declaration goes; each use becomes the
    built-in expression (``__syncthreads()``, ``threadIdx.x % 32``, ``__shfl_xor_sync(...)``).
    Anything else of the namespace is XP1102 naming the construct."""
    if layer.dialect not in ("cuda", "hip"):
        return
    S = T.S
    names = {CG_NS}
    using_ns = False
    for i, t in enumerate(S):
        if t.kind == "id" and t.text == "namespace" and T.kind(i + 1) == "id" and T.text(i + 2) == "=" \
                and T.text(i + 3) == CG_NS and T.text(i + 4) == ";":
            names.add(T.text(i + 1))
            T.blank(i, i + 4)
        elif t.kind == "id" and t.text == "using" and T.text(i + 1) == "namespace" and T.text(i + 2) == CG_NS \
                and T.text(i + 3) == ";":
            using_ns = True
            T.blank(i, i + 3)
    if not any(t.kind == "id" and t.text in names for t in S if not t.done) and not using_ns:
        return
    flat = not any(t.text == "dim3" or t.text in ("y", "z") and T.text(j - 1) == "." and
                   T.text(j - 2) in ("threadIdx", "blockDim") for j, t in enumerate(S)) and \
        any(t.text == "<<<" or t.text == "hipLaunchKernelGGL" for t in S)
    lin = "threadIdx.x" if flat else "(threadIdx.x + threadIdx.y * blockDim.x + threadIdx.z * blockDim.x * blockDim.y)"
    bsz = "blockDim.x" if flat else "(blockDim.x * blockDim.y * blockDim.z)"

    def cg_name(i):
        """(name, index of the name token) when a cooperative-groups name starts at i."""
        if T.kind(i) == "id" and T.text(i) in names and T.text(i + 1) == "::" and T.kind(i + 2) == "id" \
                and T.text(i - 1) != "::":
            return T.text(i + 2), i + 2
        if using_ns and T.kind(i) == "id" and T.text(i - 1) not in (".", "->", "::") and T.text(i) in (
                "thread_block", "thread_block_tile", "this_thread_block", "tiled_partition", "reduce", "plus",
                "greater", "less", "thread_group", "sync", "grid_group", "this_grid", "coalesced_threads",
                "coalesced_group"):
            return T.text(i), i
        return None, None

    def refuse(tok, what):
        raise layer.err("XP1102", tok, construct=f"cooperative_groups {what}")

    def const_size(a, b):
        txt = " ".join(T.text(j) for j in range(a, b + 1))
        if not re.fullmatch(r"\d+", txt) or int(txt) not in _CG_TILE_SIZES:
            raise layer.err("XP1102", S[a], construct=f"cooperative_groups tile size '{txt}' (a constant "
                                                      "1, 2, 4, 8, 16 or 32 is mapped to warp code)")
        return int(txt)

    groups = {}    # variable -> ("block",) | ("tile", size)

    def group_of_expr(a, b):
        """The group an expression a..b denotes: this_thread_block(), a group variable, or
        tiled_partition<S>(g) / tiled_partition(g, S)."""
        nm, ni = cg_name(a)
        if nm == "this_thread_block" and T.text(ni + 1) == "(" and T.text(ni + 2) == ")" and ni + 2 == b:
            return ("block",)
        if a == b and T.text(a) in groups:
            return groups[T.text(a)]
        if nm == "tiled_partition":
            if T.text(ni + 1) == "<":
                cl = T.match_angle(ni + 1)
                size = const_size(ni + 2, cl - 1)
                lp = cl + 1
                args = _split_params(T, lp, T.match(lp, "(", ")")) if T.text(lp) == "(" else []
                if T.text(lp) != "(" or T.match(lp, "(", ")") != b or len(args) != 1:
                    refuse(S[a], "tiled_partition call")
            else:
                lp = ni + 1
                if T.text(lp) != "(" or T.match(lp, "(", ")") != b:
                    refuse(S[a], "tiled_partition call")
                args = _split_params(T, lp, b)
                if len(args) != 2:
                    refuse(S[a], "tiled_partition call")
                size = const_size(*args[1])
            parent = group_of_expr(*args[0])
            if parent is None or parent[0] != "block" and not (parent[0] == "tile" and parent[1] % size == 0):
                refuse(S[a], "tiled_partition of a group that is not the thread block or a larger tile")
            return ("tile", size)
        return None

    # 1. group variables: `cg::thread_block b = cg::this_thread_block();`, `auto w = cg::tiled_partition<32>(b);`
    for i, t in enumerate(S):
        if t.done or t.kind != "id" or T.text(i + 1) != "=" or T.text(i - 1) in (".", "->"):
            continue
        st = _stmt_start(T, i)
        head = [T.text(j) for j in range(st, i)]
        nm, _ = cg_name(st) if st < i else (None, None)
        if not (nm in ("thread_block", "thread_block_tile", "thread_group") or head in (["auto"], ["const", "auto"])
                or head[:1] == ["const"] and cg_name(st + 1)[0] in ("thread_block", "thread_block_tile", "thread_group")):
            continue
        semi = i + 2
        depth = 0
        while semi < len(S) and not (T.text(semi) == ";" and depth == 0):
            depth += T.text(semi) in ("(", "[", "{")
            depth -= T.text(semi) in (")", "]", "}")
            semi += 1
        g = group_of_expr(i + 2, semi - 1)
        if g is None:
            if head and head[-1] == "auto":
                continue      # an ordinary `auto x = e;`
            refuse(t, f"group '{t.text}' initialised from something other than this_thread_block() or "
                      "tiled_partition")
        groups[t.text] = g
        T.blank(st, semi)

    def member(g, m, tok, lp, rp):
        """The replacement of g.m(args): (text before the args, text after) or a whole text."""
        args = _split_params(T, lp, rp)
        if g[0] == "block":
            table = {"sync": "__syncthreads()", "thread_rank": lin, "size": bsz, "num_threads": bsz,
                     "group_index": "blockIdx", "thread_index": "threadIdx", "group_dim": "blockDim",
                     "dim_threads": "blockDim"}
            if m in table and not args:
                return table[m]
            refuse(tok, f"thread_block::{m}")
        size = g[1]
        mask = "0xffffffffu" if size == 32 else f"(((1u << {size}) - 1u) << ({lin} % 32u / {size}u * {size}u))"
        table = {"sync": f"__syncwarp({mask if size < 32 else ''})", "thread_rank": f"({lin} % {size})",
                 "size": str(size), "num_threads": str(size), "meta_group_rank": f"({lin} / {size})",
                 "meta_group_size": f"(({bsz} + {size - 1}) / {size})"}
        if m in table and not args:
            return table[m]
        shfl = {"shfl": "__shfl_sync", "shfl_down": "__shfl_down_sync", "shfl_up": "__shfl_up_sync",
                "shfl_xor": "__shfl_xor_sync"}
        if m in shfl and len(args) == 2:
            return (f"{shfl[m]}({mask}, ", f", {size})")
        if m in ("any", "all", "ballot") and len(args) == 1 and size == 32:
            return (f"__{m}_sync({mask}, ", ")")
        refuse(tok, f"thread_block_tile<{size}>::{m}" + ("" if m in table or m in shfl else " (not mapped)"))

    # 2. member calls and free functions
    for i, t in enumerate(S):
        if t.done or t.kind != "id":
            continue
        if t.text in groups and T.text(i - 1) not in (".", "->", "::"):
            if T.text(i + 1) == "." and T.kind(i + 2) == "id" and T.text(i + 3) == "(":
                rp = T.match(i + 3, "(", ")")
                rep = member(groups[t.text], T.text(i + 2), t, i + 3, rp)
                if isinstance(rep, str):
                    T.set(i, rep)
                    T.blank(i + 1, rp)
                else:
                    T.set(i, "")
                    T.blank(i + 1, i + 2)
                    T.set(i + 3, rep[0])
                    T.set(rp, rep[1])
                continue
            # a use as a value (passed to a helper, copied...): refused below unless cg::reduce/sync takes it
            continue
        nm, ni = cg_name(i)
        if nm is None:
            continue
        if nm == "this_thread_block" and T.text(ni + 1) == "(" and T.text(ni + 2) == ")" and T.text(ni + 3) == "." \
                and T.kind(ni + 4) == "id" and T.text(ni + 5) == "(":
            rp = T.match(ni + 5, "(", ")")
            rep = member(("block",), T.text(ni + 4), t, ni + 5, rp)
            if not isinstance(rep, str):
                refuse(t, f"this_thread_block().{T.text(ni + 4)}")
            T.set(i, rep)
            T.blank(i + 1, rp)
        elif nm == "sync" and T.text(ni + 1) == "(":
            rp = T.match(ni + 1, "(", ")")
            args = _split_params(T, ni + 1, rp)
            g = group_of_expr(*args[0]) if len(args) == 1 else None
            if g is None:
                refuse(t, "sync of a group that is not a local thread_block or tile")
            T.set(i, member(g, "sync", t, rp, rp))    # no arguments
            T.blank(i + 1, rp)
        elif nm == "reduce" and T.text(ni + 1) == "(":
            rp = T.match(ni + 1, "(", ")")
            args = _split_params(T, ni + 1, rp)
            g = group_of_expr(*args[0]) if len(args) == 3 else None
            if g is None or g[0] != "tile":
                refuse(t, "reduce over something other than a tiled_partition tile")
            a, b = args[2]
            on, oi = cg_name(a)
            if on not in _CG_OPS or T.text(oi + 1) != "<":
                refuse(t, "reduce with an operator other than plus, greater or less")
            cl = T.match_angle(oi + 1)
            if T.text(cl + 1) != "(" or T.text(cl + 2) != ")" or cl + 2 != b:
                refuse(t, "reduce operator")
            T.set(i, f"{CG_REDUCE}{_CG_OPS[on]}_{g[1]}")
            T.blank(i + 1, ni)
            T.blank(args[0][0], args[1][0] - 1)       # the group and its comma
            T.blank(args[1][1] + 1, b)                # the comma and the operator
        else:
            refuse(t, f"{nm}" + ("" if nm in ("thread_block", "thread_block_tile", "tiled_partition",
                                                "this_thread_block") else " (not mapped to plain CUDA)"))
    # the headers go with the namespace: nothing of it is left for a printer
    layer.trivia = [x for x in layer.trivia if not (x.kind == "include" and "cooperative_groups" in x.text)]
    for i, t in enumerate(S):
        if not t.done and t.kind == "id" and t.text in groups and T.text(i - 1) not in (".", "->", "::"):
            refuse(t, f"group '{t.text}' used as a value (only its member calls, cg::sync and cg::reduce "
                      "are mapped; a group passed to a helper is not)")
        if not t.done and t.kind == "id" and t.text in names and T.text(i + 1) == "::":
            refuse(t, f"{T.text(i + 2)}")


# ------------------------------------------------------------------------------ lambdas
def _lambdas(layer, T):
    """``auto f = [captures](params) -> R { body };`` inside a function, with no capture or
    captures by reference, becomes ``R __xp_lambda_f(params); { body };``: a block-scope
    prototype followed by the body, which lower.py lifts to a helper function (captured
    variables become extra parameters) and whose calls it rewrites. Other lambdas are refused
    (XP1142, or XP1104 where a lambda is not bound to a name)."""
    S = T.S
    depth = 0
    for i, t in enumerate(S):
        if t.kind == "punct" and t.text == "{" and t.out != "":
            depth += 1
        elif t.kind == "punct" and t.text == "}" and t.out != "":
            depth -= 1
        if not (t.kind == "id" and t.text == "auto" and not t.done and T.kind(i + 1) == "id"
                and T.text(i + 2) == "=" and T.text(i + 3) == "["):
            continue
        name = T.text(i + 1)

        def no(detail, tok=t):
            raise layer.err("XP1142", tok, name=name, detail=detail)

        if depth <= 0:
            no("it is at file scope; write a function instead")
        rb = T.match(i + 3, "[", "]")
        caps = [" ".join(T.text(j) for j in range(a, b + 1)) for a, b in _split_params(T, i + 3, rb)]
        for c in caps:
            if c == "&" or re.fullmatch(r"& [A-Za-z_]\w*", c):
                continue
            no(f"it captures '{c}' by value (only [], [&] and [&name, ...] lambdas are lifted); capture by "
               "reference or pass the value as a parameter")
        lp = rb + 1
        if T.text(lp) != "(":
            no("a lambda without a parameter list")
        rp = T.match(lp, "(", ")")
        for a, b in _split_params(T, lp, rp):
            words = [T.text(j) for j in range(a, b + 1)]
            if "auto" in words:
                no("a generic lambda (an 'auto' parameter) has no single type to lift to")
            amp = [j for j in range(a, b + 1) if T.text(j) in ("&", "&&") and S[j].kind == "punct"]
            if amp:
                if T.text(amp[0]) == "&" and "const" in words[:amp[0] - a]:
                    T.set(amp[0], "")        # read-only: by value
                else:
                    no(f"parameter '{words[-1]}' is a non-const reference; pass a pointer", S[amp[0]])
        k = rp + 1
        ret = None
        while T.text(k) in ("mutable", "noexcept", "constexpr"):
            if T.text(k) == "mutable":
                no("a mutable lambda (it changes copies of what it captures)", S[k])
            T.set(k, "")
            k += 1
        if T.text(k) == "->":
            r0 = k + 1
            while k < len(S) and T.text(k) != "{":
                k += 1
            ret = " ".join(T.text(j) for j in range(r0, k))
            T.blank(rp + 1, k - 1)
        if T.text(k) != "{":
            no("no body after the parameter list")
        close = T.match(k, "{", "}")
        if T.text(close + 1) != ";":
            no("a lambda called or used where it is written (only `auto f = [..](..) {..};` then f(..) is read)")
        if re.search(r"\[\s*[&=]?\s*\]\s*\(", " ".join(T.text(j) for j in range(k, close))):
            no("a lambda inside a lambda")
        if ret is None:
            layer.user_types.add(AUTO)
        T.set(i, ret or AUTO)
        T.set(i + 1, LAMBDA + name)
        T.blank(i + 2, rb)
        S[rp].out = ");"
        S[rp].done = True


# ------------------------------------------------------------------------------ structs, brace initialisation, std::fill
_NOT_TYPES = {"struct", "union", "enum", "else", "do", "return", "namespace", "extern", "try", "case", "goto"}


def _structs_and_braces(layer, T):
    """``struct S { ... };`` used as ``S`` (C++ style) gets ``typedef struct S S;`` after it, on
    the same line; ``T x{a, b};`` / ``T x{};`` in a body becomes ``T x = {a, b};`` / ``= {0}``."""
    S = T.S
    depth = 0
    for i, t in enumerate(S):
        if t.kind == "punct" and t.text == "{" and t.out != "":
            if depth > 0 and T.kind(i - 1) == "id" and not S[i - 1].done and T.kind(i - 2) in ("id", "punct") \
                    and T.text(i - 2) not in _NOT_TYPES and (T.kind(i - 2) == "id" or T.text(i - 2) in ("*", ">")) \
                    and T.text(i - 1) not in _NOT_TYPES and _is_decl_head(T, i - 1):
                close = T.match(i, "{", "}")
                if T.text(close + 1) in (";", ","):
                    T.set(i, "= {")
                    if close == i + 1:
                        T.set(close, "0}")
                    continue
            depth += 1
        elif t.kind == "punct" and t.text == "}" and t.out != "":
            depth -= 1
        elif depth == 0 and t.kind == "id" and t.text in ("struct", "union") and T.kind(i + 1) == "id" \
                and T.text(i + 2) == "{" and T.text(i - 1) != "typedef":
            name = T.text(i + 1)
            close = T.match(i + 2, "{", "}")
            used_bare = any(u.kind == "id" and u.text == name and T.text(j - 1) not in ("struct", "union")
                            for j, u in enumerate(S) if j > close)
            if T.text(close + 1) == ";" and used_bare:
                S[close + 1].out = f"; typedef {t.text} {name} {name};"
                S[close + 1].done = True


def _fill_loop(layer, T, i):
    """``std::fill(p, end, v);`` as a statement, ``p`` a name: an index loop writing ``v`` to
    ``p[0 .. end - p)``. False (left as a call) for any other form."""
    S = T.S
    lp = i + 3
    rp = T.match(lp, "(", ")")
    args = _split_params(T, lp, rp)
    if len(args) != 3 or T.text(rp + 1) != ";" or T.text(i - 1) not in (";", "{", "}", ")", "else"):
        return False
    (a0, a1), (b0, b1), (v0, v1) = args
    if a0 != a1 or T.kind(a0) != "id":
        return False
    p = T.text(a0)
    k = getattr(layer, "fill_loops", 0)
    layer.fill_loops = k + 1
    iv = f"fill_i{k}" if k else "fill_i"
    T.set(i, f"for (long {iv} = 0; {iv} < (")
    T.blank(i + 1, b0 - 1)                       # ::fill( p ,
    T.set(b1 + 1, f") - {p}; ++{iv}) {p}[{iv}] = (")   # the comma before the value
    return True
