"""The dialect layer: turns CUDA / HIP / BANG / C-with-intrinsics source into plain C that
pycparser accepts, and records everything it took out so the IR can be rebuilt faithfully.

It works on tokens, never changes the number of lines (so pycparser's line numbers are the
source's), and mostly keeps columns (replacements are made on the same line).  What it records:

* comments and preprocessor lines (``trivia``) with their positions, re-attached to the IR
  by ``lower.py``; ``#pragma`` lines stay in the text (pycparser keeps them as nodes);
* qualifiers removed from declarations (``__global__``, ``__shared__``, ``__nram__``,
  ``__launch_bounds__(..)``, ``__attribute__((..))``, ``extern "C"``...), looked up by the
  position of the declared name (``quals_for``);
* ``k<<<g, b, s, q>>>(args)`` becomes ``k(g, b, s, q)(args)`` plus a launch record;
* ``wmma::fragment<...>`` becomes a fresh typedef name plus a fragment record;
* C++ casts become C casts, ``std::`` is dropped, ``nvcuda::wmma::f`` becomes one name,
  ``using`` aliases become typedefs, ``dim3 g(a, b)`` becomes a marked initialisation;
* #define macros whose body is not an expression are expanded (the #define line stays);
  expression macros stay as names / calls (analyses resolve them through Program.macros).

Unsupported C++ (templates, classes, lambdas, exceptions, references...) raises XP11xx with
the location and the construct's name.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

from .errors import fe_error

# ------------------------------------------------------------------------------- tables
KIND_QUALS = {
    "__global__": "kernel", "__mlu_global__": "kernel", "__mlu_entry__": "kernel",
    "__device__": "device", "__mlu_func__": "device", "__mlu_device__": "device", "__host__": "host",
}
SCOPE_QUALS = {"__shared__": "shared", "__constant__": "constant", "__nram__": "nram", "__wram__": "wram",
               "__mlu_shared__": "sram", "__mlu_const__": "constant", "__managed__": "global"}
PLAIN_QUALS = {"__forceinline__", "__inline__", "__noinline__", "inline", "__mlu_inline__",
               "__grid_constant__", "__restrict_arr"}
ARG_QUALS = {"__launch_bounds__", "__align__", "alignas", "__attribute__", "__declspec", "__builtin_align__"}

SCALAR_KEYWORDS = {"void", "char", "short", "int", "long", "float", "double", "signed", "unsigned", "_Bool",
                   "bool", "_Float16", "__fp16", "__bf16"}
TYPE_KEYWORDS = SCALAR_KEYWORDS | {"const", "volatile", "struct", "union", "enum"}

#: type names the dialects' headers provide; injected as typedefs when the file uses them
KNOWN_SCALAR_TYPES = {
    "half", "__half", "bfloat16", "bfloat16_t", "__nv_bfloat16", "__hip_bfloat16", "hip_bfloat16", "_Float16", "__bf16",
    "bool", "size_t", "ptrdiff_t", "intptr_t", "uintptr_t",
    "int8_t", "uint8_t", "int16_t", "uint16_t", "int32_t", "uint32_t", "int64_t", "uint64_t",
    "__mmask8", "__mmask16", "__mmask32", "__mmask64",
}
KNOWN_OTHER_TYPES = {
    "half2", "__half2", "__nv_bfloat162", "float1", "float2", "float3", "float4", "double2", "double4",
    "int2", "int3", "int4", "uint2", "uint3", "uint4", "char2", "char4", "uchar4", "short2", "short4",
    "longlong2", "dim3", "cudaStream_t", "hipStream_t", "cudaError_t", "hipError_t", "cudaEvent_t",
    "hipEvent_t", "cudaDeviceProp", "hipDeviceProp_t",
    "__m128", "__m128i", "__m128d", "__m256", "__m256i", "__m256d", "__m512", "__m512i", "__m512d",
    "__m512bh", "__m256bh", "__m512h",
    "cnrtQueue_t", "cnrtDim3_t", "cnrtFunctionType_t", "cnrtRet_t", "cnrtNotifier_t",
    "mluMemcpyDirection_t", "cnrtMemTransDir_t",
}
KNOWN_TYPES = KNOWN_SCALAR_TYPES | KNOWN_OTHER_TYPES

UNSUPPORTED_KEYWORDS = {
    "class": "class", "virtual": "virtual function", "operator": "operator overloading",
    "throw": "exception (throw)", "try": "exception (try/catch)", "catch": "exception (try/catch)",
    "typename": "template typename", "decltype": "decltype", "friend": "friend declaration",
    "public": "access specifier", "private": "access specifier", "protected": "access specifier",
    "dynamic_cast": "dynamic_cast", "typeid": "typeid", "namespace": "namespace definition",
    "auto": "auto type deduction", "co_await": "coroutine", "concept": "concept", "requires": "requires clause",
}
CASTS = {"static_cast", "reinterpret_cast", "const_cast"}
KNOWN_NAMESPACES = {"std", "nvcuda", "wmma"}

_TOKEN_RE = re.compile(r"""
    (?P<ws>[ \t\r\n\f\v]+|\\\n)
  | (?P<lcom>//[^\n]*)
  | (?P<bcom>/\*.*?\*/)
  | (?P<str>(?:L|u8|u|U)?"(?:\\.|[^"\\\n])*")
  | (?P<chr>'(?:\\.|[^'\\\n])+')
  | (?P<num>\.?[0-9](?:[eEpP][+-]|[0-9A-Za-z_.'])*)
  | (?P<id>[A-Za-z_$][A-Za-z0-9_$]*)
  | (?P<punct><<<|>>>|<<=|>>=|\.\.\.|::|->|\+\+|--|<<|>>|<=|>=|==|!=|&&|\|\||[-+*/%&|^]=|[^\s])
""", re.X | re.S)

STMT_START = {";", "{", "}", None}


@dataclass
class Tok:
    kind: str           # ws lcom bcom str chr num id punct pp
    text: str
    line: int
    col: int            # 1-based, in the source
    out: str | None = None   # replacement text (None: unchanged)
    done: bool = False       # rewritten by the C++ pass (cxx.py): rewrite() leaves it alone

    @property
    def o(self) -> str:
        return self.text if self.out is None else self.out


@dataclass
class Trivia:
    """A comment or a preprocessor line taken out of the text."""
    line: int
    col: int
    end_line: int
    text: str
    kind: str           # comment | include | define | cond | pragma | other | using
    trailing: bool = False   # code precedes it on its line


@dataclass
class FragInfo:
    kind: str
    m: str
    n: str
    k: str
    elem: str
    layout: str | None


@dataclass
class MacroInfo:
    name: str
    params: tuple | None
    body: str
    line: int
    expanded: bool = False


@dataclass
class Prepared:
    file: str
    dialect: str
    text: str                         # what pycparser parses (prelude + line marker + body)
    trivia: list
    macros: list
    frags: dict                       # typedef name -> FragInfo
    typedef_names: set
    extern_c_ranges: list = field(default_factory=list)
    toks: list = field(default_factory=list)
    id_at: dict = field(default_factory=dict)       # (line, out col) -> token index
    quals: dict = field(default_factory=dict)       # token index -> qualifier text
    launches: dict = field(default_factory=dict)    # token index of kernel name -> (grid..stream) count
    brace_close: dict = field(default_factory=dict)  # (line, out col) of '{' -> line of matching '}'
    out_cols: dict = field(default_factory=dict)     # token index -> (line, out col)
    using_alias: dict = field(default_factory=dict)

    # -- lookups used by lower.py
    def tok_index(self, line: int, col: int):
        return self.id_at.get((line, col))

    def quals_for(self, line: int, col: int) -> list:
        """Qualifiers removed around the declaration whose name is at (line, col)."""
        k = self.tok_index(line, col)
        if k is None:
            return []
        found = []
        toks = self.toks
        j = k - 1
        while j >= 0:
            t = toks[j]
            if t.kind == "punct" and t.text in (";", "{", "}"):
                break
            if j in self.quals:
                found.append((j, self.quals[j]))
            j -= 1
        depth = 0
        j = k + 1
        while j < len(toks):
            t = toks[j]
            if t.kind == "punct":
                if t.text in "([":
                    depth += 1
                elif t.text in ")]":
                    depth -= 1
                elif depth <= 0 and t.text in (";", "{", "=", ","):
                    break
            if j in self.quals and depth <= 0:
                found.append((j, self.quals[j]))
            j += 1
        found.sort()
        out = [q for _, q in found]
        if any(a <= k <= b for a, b in self.extern_c_ranges) and "extern_c" not in out:
            out.insert(0, "extern_c")
        return out

    def struct_quals(self, line: int, col: int) -> list:
        """Qualifiers removed before the name (at line, col) of a typedef that defines a struct/union,
        outside its braces: ``typedef struct __attribute__((aligned(16))) {...} T;`` or ``struct {...}
        __align__(16) T;`` (``quals_for`` stops at the closing brace)."""
        k = self.tok_index(line, col)
        if k is None:
            return []
        found, depth, j = [], 0, k - 1
        while j >= 0:
            t = self.toks[j]
            if t.kind == "punct" and t.text == "}":
                depth += 1
            elif t.kind == "punct" and t.text == "{":
                depth -= 1
                if depth < 0:
                    break
            elif t.kind == "punct" and t.text == ";" and depth == 0:
                break
            if depth == 0 and j in self.quals:
                found.append((j, self.quals[j]))
            j -= 1
        return [q for _, q in sorted(found)]

    def is_launch(self, line: int, col: int) -> bool:
        k = self.tok_index(line, col)
        return k is not None and k in self.launches

    def src_col(self, line: int, out_col: int) -> int:
        """Map a column of the prepared text back to the source column on the same line."""
        best = None
        for k, (ln, oc) in self.out_cols.items():
            if ln == line and oc <= out_col and (best is None or oc > best[0]):
                best = (oc, self.toks[k].col)
        return best[1] if best else out_col


# ------------------------------------------------------------------------------ tokenize
def tokenize(text: str, file: str) -> list:
    toks = []
    pos, line, col = 0, 1, 1
    n = len(text)
    line_has_code = False
    while pos < n:
        ch = text[pos]
        if ch == "#" and not line_has_code:
            # a preprocessor line, with backslash continuations
            end = pos
            while True:
                nl = text.find("\n", end)
                if nl == -1:
                    end = n
                    break
                if text[nl - 1] == "\\" or (text[nl - 1] == "\r" and text[nl - 2] == "\\"):
                    end = nl + 1
                    continue
                end = nl
                break
            s = text[pos:end]
            toks.append(Tok("pp", s, line, col))
            nls = s.count("\n")
            line += nls
            col = (len(s) - s.rfind("\n")) if nls else col + len(s)
            pos = end
            continue
        m = _TOKEN_RE.match(text, pos)
        if m is None:  # pragma: no cover - the punct branch matches any char
            raise fe_error("XP1101", file, line, col, token=ch)
        kind = m.lastgroup
        s = m.group(kind)
        if kind == "punct" and s == "/" and text.startswith("/*", pos):
            raise fe_error("XP1115", file, line, col, what="comment")
        if kind == "punct" and s in ('"', "'"):
            raise fe_error("XP1115", file, line, col, what="string or character literal")
        toks.append(Tok(kind, s, line, col))
        nls = s.count("\n")
        if nls:
            line += nls
            col = len(s) - s.rfind("\n")
            line_has_code = False if kind in ("ws", "bcom") and not s.endswith("\\\n") else line_has_code
            if kind == "bcom":
                # code may still precede on the last line of a block comment; keep simple
                line_has_code = False
        else:
            col += len(s)
            if kind not in ("ws", "lcom", "bcom"):
                line_has_code = True
        pos = m.end()
    return toks


def _sig(toks):
    return [i for i, t in enumerate(toks) if t.kind not in ("ws", "lcom", "bcom", "pp")]


# --------------------------------------------------------------------------- the layer
class _Layer:
    def __init__(self, text: str, file: str, dialect: str, parser):
        self.file = file
        self.dialect = dialect
        self.parser = parser
        self.toks = tokenize(text, file)
        self.trivia: list = []
        self.macros: list = []
        self.frags: dict = {}
        self.quals: dict = {}
        self.launches: dict = {}
        self.extern_c_ranges: list = []
        self.typedef_names: set = set()
        self.user_types: set = set()
        self.using_alias: dict = {}

    def err(self, code, tok, **kw):
        return fe_error(code, self.file, tok.line if tok else None, tok.col if tok else None, **kw)

    # -- pass 1: comments and directives
    def take_trivia(self):
        last_code_line = 0
        for t in self.toks:
            if t.kind in ("lcom", "bcom"):
                self.trivia.append(Trivia(t.line, t.col, t.line + t.text.count("\n"), t.text, "comment",
                                          trailing=(last_code_line == t.line)))
                t.out = re.sub(r"[^\n]", " ", t.text)
            elif t.kind == "pp":
                body = t.text.lstrip()[1:].lstrip()
                word = re.match(r"\w*", body).group(0)
                end_line = t.line + t.text.count("\n")
                if word == "pragma":
                    # pycparser keeps #pragma lines as nodes; fold continuations into one line
                    if "\n" in t.text:
                        t.out = t.text.replace("\\\n", "  ").replace("\\\r\n", "  ") + "\n" * t.text.count("\n")
                    continue
                kind = {"include": "include", "define": "define", "if": "cond", "ifdef": "cond", "ifndef": "cond",
                        "else": "cond", "elif": "cond", "endif": "cond"}.get(word, "other")
                self.trivia.append(Trivia(t.line, t.col, end_line, t.text.rstrip(), kind))
                if word == "define":
                    self._record_macro(t)
                t.out = "\n" * t.text.count("\n")
            elif t.kind != "ws":
                last_code_line = t.line + t.text.count("\n")

    def _record_macro(self, t):
        body = t.text.lstrip()[1:].lstrip()[len("define"):]
        body = re.sub(r"\\\r?\n", " ", body)
        body = re.sub(r"/\*.*?\*/", " ", body, flags=re.S)
        body = re.sub(r"//.*", "", body)
        m = re.match(r"\s*([A-Za-z_]\w*)(\(([^)]*)\))?", body)
        if not m:
            raise self.err("XP1101", t, token=body.strip()[:20] or "#define")
        params = None
        if m.group(2) is not None:
            params = tuple(p.strip() for p in m.group(3).split(",") if p.strip())
        self.macros.append(MacroInfo(m.group(1), params, body[m.end():].strip(), t.line))

    # -- pass 2: expand macros whose bodies are not expressions
    def expand_macros(self):
        from .macros import is_expression_macro
        todo = {}
        for mi in self.macros:
            if not is_expression_macro(mi, self.parser, KNOWN_TYPES):
                mi.expanded = True
                todo[mi.name] = mi
        if not todo:
            return
        for _round in range(8):
            changed = False
            out = []
            toks = self.toks
            i = 0
            while i < len(toks):
                t = toks[i]
                mi = todo.get(t.text) if t.kind == "id" else None
                if mi is None:
                    out.append(t)
                    i += 1
                    continue
                body = mi.body
                if mi.params is not None:
                    j = i + 1
                    while j < len(toks) and toks[j].kind == "ws":
                        j += 1
                    if j >= len(toks) or toks[j].text != "(":
                        out.append(t)
                        i += 1
                        continue
                    args, cur, depth, j = [], [], 0, j + 1
                    while j < len(toks):
                        x = toks[j]
                        if x.text in "([{" and x.kind == "punct":
                            depth += 1
                        elif x.text in ")]}" and x.kind == "punct":
                            if depth == 0:
                                break
                            depth -= 1
                        if x.text == "," and depth == 0 and x.kind == "punct":
                            args.append("".join(y.text for y in cur))
                            cur = []
                        else:
                            cur.append(x)
                        j += 1
                    else:
                        raise self.err("XP1107", t, token="(")
                    args.append("".join(y.text for y in cur))
                    if any("\n" in a for a in args):
                        raise self.err("XP1112", t, detail=f"macro {mi.name} used across lines")
                    sub = dict(zip(mi.params, [a.strip() for a in args]))
                    body = re.sub(r"\b[A-Za-z_]\w*\b", lambda m: sub.get(m.group(0), m.group(0)), body)
                    body = body.replace("##", "")
                    i = j + 1
                else:
                    i += 1
                for nt in tokenize(body, self.file):
                    if nt.kind == "ws":
                        nt.text = " "
                    out.append(Tok(nt.kind, nt.text, t.line, t.col))
                out.append(Tok("ws", " ", t.line, t.col))
                changed = True
            self.toks = out
            if not changed:
                break

    # -- pass 3: dialect constructs
    def rewrite(self):
        toks = self.toks
        sig = _sig(toks)
        S = [toks[k] for k in sig]
        nS = len(S)

        def text(i):
            return S[i].text if 0 <= i < nS else None

        def kind(i):
            return S[i].kind if 0 <= i < nS else None

        def match_close(i, open_, close):
            depth = 0
            for j in range(i, nS):
                if S[j].kind == "punct":
                    if S[j].text == open_:
                        depth += 1
                    elif S[j].text == close:
                        depth -= 1
                        if depth == 0:
                            return j
            raise self.err("XP1107", S[i], token=open_)

        def match_angle(i):
            depth = 0
            for j in range(i, nS):
                tx = S[j].text
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
            raise self.err("XP1107", S[i], token="<")

        def blank(a, b):
            for j in range(a, b + 1):
                S[j].out = ""

        def prev_sig(i):
            j = i - 1
            while j >= 0 and S[j].out == "":
                j -= 1
            return S[j].text if j >= 0 else None

        # typedef names declared in the file
        for i in range(nS):
            if text(i) == "typedef":
                depth, last = 0, None
                for j in range(i + 1, nS):
                    tx = S[j].text
                    if tx == "(":
                        depth += 1
                    elif tx == ")":
                        depth -= 1
                    elif tx == ";" and depth == 0:
                        break
                    elif kind(j) == "id" and depth == 0 and tx not in ARG_QUALS:
                        last = tx
                if last:
                    self.user_types.add(last)
            elif text(i) == "using" and kind(i + 1) == "id" and text(i + 2) == "=":
                self.user_types.add(text(i + 1))

        def is_type_name(tx):
            return tx in TYPE_KEYWORDS or tx in KNOWN_TYPES or tx in self.user_types or tx in self.frags

        depth = 0
        frag_n = 0
        i = 0
        while i < nS:
            t = S[i]
            tx = t.text
            if t.done:
                i += 1
                continue
            if t.kind == "id":
                if tx == "extern" and kind(i + 1) == "str" and text(i + 1) in ('"C"', '"C++"'):
                    if text(i + 2) == "{":
                        close = match_close(i + 2, "{", "}")
                        blank(i, i + 2)
                        S[close].out = ""
                        self.extern_c_ranges.append((sig[i], sig[close]))
                        i += 3
                        continue
                    blank(i, i + 1)
                    self.quals[sig[i]] = "extern_c"
                    i += 2
                    continue
                if tx in KIND_QUALS or tx in SCOPE_QUALS or tx in PLAIN_QUALS:
                    t.out = ""
                    self.quals[sig[i]] = tx
                elif tx in ARG_QUALS and text(i + 1) == "(":
                    close = match_close(i + 1, "(", ")")
                    self.quals[sig[i]] = "".join(S[j].text for j in range(i, close + 1)).replace("\n", " ")
                    blank(i, close)
                    i = close + 1
                    continue
                elif tx in ("__restrict__", "__restrict"):
                    t.out = "restrict"
                elif tx == "constexpr":
                    t.out = "const"
                    self.quals[sig[i]] = "constexpr"
                elif tx == "static_assert":
                    t.out = "_Static_assert"
                elif tx == "template":
                    raise self.err("XP1103", t)
                elif tx in UNSUPPORTED_KEYWORDS and not (tx == "namespace" and text(i - 1) == "using"):
                    raise self.err("XP1102", t, construct=UNSUPPORTED_KEYWORDS[tx])
                elif tx in ("new", "delete") and (kind(i + 1) == "id" or text(i + 1) == "["):
                    raise self.err("XP1102", t, construct=f"dynamic allocation ({tx})")
                elif tx == "using":
                    semi = i
                    while semi < nS and text(semi) != ";":
                        semi += 1
                    if semi >= nS:
                        raise self.err("XP1101", t, token="using")
                    if text(i + 1) == "namespace":
                        s = "using " + " ".join(S[j].text for j in range(i + 1, semi)).replace(" :: ", "::") + ";"
                        s = re.sub(r"\s*::\s*", "::", s)
                        self.trivia.append(Trivia(t.line, t.col, t.line, s, "using"))
                        blank(i, semi)
                    elif text(i + 2) == "=":
                        alias = text(i + 1)
                        for j in range(i + 3, semi):   # using V = __attribute__((vector_size(..))) T;
                            if S[j].text == "__attribute__" and text(j + 1) == "(":
                                cl = match_close(j + 1, "(", ")")
                                self.alias_attrs[alias] = "".join(S[x].text for x in range(j, cl + 1))
                                blank(j, cl)
                        target = " ".join(S[j].text for j in range(i + 3, semi) if S[j].out != "")
                        self.using_alias[alias] = target
                        t.out = "typedef"
                        S[i + 1].out = ""
                        S[i + 2].out = ""
                        S[semi - 1].out = S[semi - 1].text + " " + alias
                    else:
                        raise self.err("XP1102", t, construct="using declaration")
                    i = semi + 1
                    continue
                elif tx in CASTS:
                    if text(i + 1) != "<":
                        raise self.err("XP1101", t, token=tx)
                    close = match_angle(i + 1)
                    if text(close + 1) != "(":
                        raise self.err("XP1101", t, token=tx)
                    pc = match_close(close + 1, "(", ")")
                    t.out = "("
                    S[i + 1].out = "("
                    S[close].out = ")"
                    S[pc].out = "))"
                    i += 2
                    continue
                elif text(i + 1) == "::":
                    if tx in ("std", "nvcuda"):
                        blank(i, i + 1)
                        i += 2
                        continue
                    if tx == "wmma":
                        blank(i, i + 1)
                        nxt = i + 2
                        if text(nxt) == "fragment":
                            i = nxt
                            continue
                        if kind(nxt) == "id":
                            S[nxt].out = "__xpw_" + S[nxt].text
                        i = nxt + 1
                        continue
                    raise self.err("XP1106", t, name=tx)
                if tx == "fragment" and text(i + 1) == "<":
                    close = match_angle(i + 1)
                    args = [[]]
                    for j in range(i + 2, close):
                        if S[j].text == "," and S[j].kind == "punct":
                            args.append([])
                        else:
                            args[-1].append(S[j].text)
                    args = ["".join(a).replace("wmma::", "").replace("nvcuda::", "") for a in args]
                    if len(args) not in (5, 6) or args[0] not in ("matrix_a", "matrix_b", "accumulator"):
                        raise self.err("XP1110", t, detail="<" + ", ".join(args) + ">")
                    name = f"__xp_frag_{frag_n}"
                    frag_n += 1
                    self.frags[name] = FragInfo(args[0], args[1], args[2], args[3], args[4],
                                                args[5] if len(args) == 6 else None)
                    blank(i, close)
                    t.out = name
                    i = close + 1
                    continue
                # functional casts / constructor calls in expressions: T(x)
                if text(i + 1) == "(" and is_type_name(tx) and tx not in ("const", "volatile", "struct", "union",
                                                                          "enum", "void"):
                    p = prev_sig(i)
                    if p in ("=", "(", ",", "return", "<<<", "+", "-", "*", "/", "?", ":", "[", "{", "<", ">", "&&", "||",
                             "!", "%", "==", "!=", "<=", ">=", "+=", "-=", "*=", "/=", "&", "|", "^"):
                        if text(i + 2) != "*" and not (p == "(" and text(i + 2) == ")"):
                            if tx in SCALAR_KEYWORDS or tx in KNOWN_SCALAR_TYPES:
                                t.out = f"({tx})"
                            else:
                                t.out = f"__xp_ctor_{tx}"
                # constructor-style declaration inside a body: T name(args)
                if (depth > 0 and is_type_name(tx) and kind(i + 1) == "id" and text(i + 2) == "("
                        and prev_sig(i) in (";", "{", "}", "const", None) and tx not in SCALAR_KEYWORDS):
                    S[i + 1].out = f"{S[i + 1].text} = __xp_ctor_{tx}"
                # C++ references: T& x
                if is_type_name(tx) and text(i + 1) in ("&", "&&") and not S[i + 1].done and kind(i + 2) == "id" \
                        and text(i + 3) in (",", ")", "=", ";"):
                    raise self.err("XP1105", S[i + 1], name=text(i + 2))
                # unknown type names used in declarations: `Foo bar` at a statement start
                if (kind(i + 1) == "id" and tx not in TYPE_KEYWORDS and tx not in KNOWN_TYPES
                        and not tx.startswith("__xp") and prev_sig(i) in (";", "{", "}", "(", ",", None)
                        and text(i + 1) not in ARG_QUALS and tx not in ("return", "else", "do", "goto", "case",
                                                                          "typedef", "extern", "static", "register",
                                                                          "restrict", "sizeof", "inline")
                        and text(i + 1) not in KIND_QUALS and text(i + 1) not in SCOPE_QUALS):
                    self.user_types.add(tx)
                if tx.endswith("_t") and text(i + 1) == "*" and prev_sig(i) in ("(", ",", ";", "{", "}", None) \
                        and tx not in TYPE_KEYWORDS:
                    self.user_types.add(tx)
            elif t.kind == "punct":
                if tx == "{" and t.out is None:
                    depth += 1
                elif tx == "}" and t.out is None:
                    depth -= 1
                elif tx == "<<<":
                    kn = i - 1
                    while kn > 0 and S[kn].out == "" and S[kn].done:   # k<256><<<: template args taken
                        kn -= 1
                    if kind(kn) != "id":
                        raise self.err("XP1111", t, detail="no kernel name before <<<")
                    j = i + 1
                    pd = 0
                    while j < nS and not (S[j].text == ">>>" and pd == 0):
                        if S[j].text in ("(", "[", "{"):
                            pd += 1
                        elif S[j].text in (")", "]", "}"):
                            pd -= 1
                        elif S[j].text == ";":
                            raise self.err("XP1111", t, detail="missing >>>")
                        j += 1
                    if j >= nS:
                        raise self.err("XP1111", t, detail="missing >>>")
                    if text(j + 1) != "(":
                        raise self.err("XP1111", S[j], detail="missing argument list after >>>")
                    t.out = "("
                    S[j].out = ")"
                    self.launches[sig[kn]] = True
                elif tx == ">>>" and t.out is None:
                    raise self.err("XP1111", t, detail=">>> without <<<")
                elif tx == "[" and prev_sig(i) in ("=", "(", ",", "return", None) and \
                        (text(i + 1) in ("=", "&", "]") or (kind(i + 1) == "id" and text(i + 2) in ("]", ","))
                         and text(i + 3) in ("(", "{", "mutable")):
                    if text(i + 1) in ("=", "&") or text(match_close(i, "[", "]") + 1) in ("(", "{", "mutable"):
                        raise self.err("XP1104", t)
                elif tx == "::":
                    if kind(i + 1) == "id" and (i == 0 or kind(i - 1) != "id"):
                        t.out = ""  # ::name (global scope)
                    else:
                        raise self.err("XP1106", t, name=text(i - 1) or "")
            i += 1

    # -- assemble the text pycparser sees
    def assemble(self, parser_typedefs: set) -> Prepared:
        parts = []
        line, col = 1, 1
        id_at, out_cols, brace_close = {}, {}, {}
        open_stack = []
        for k, t in enumerate(self.toks):
            s = t.o
            if t.kind in ("id", "punct", "num") and s:
                lead = len(s) - len(s.lstrip())
                out_cols[k] = (line, col + lead)
                if t.kind == "id":
                    id_at[(line, col + lead)] = k
                if t.kind == "punct" and t.text == "{" and t.out is None:
                    open_stack.append((line, col))
                elif t.kind == "punct" and t.text == "}" and t.out is None and open_stack:
                    brace_close[open_stack.pop()] = line
            parts.append(s)
            nls = s.count("\n")
            if nls:
                line += nls
                col = len(s) - s.rfind("\n")
            else:
                col += len(s)
        body = "".join(parts)
        used = set(re.findall(r"[A-Za-z_]\w*", body))
        inject = []
        for name in sorted((KNOWN_TYPES | parser_typedefs) & used):
            if name in self.user_types and name not in KNOWN_TYPES:
                pass
            if name in ("bool", "_Float16", "__bf16") or self._declared_as_variable(name):
                if name in ("bool", "_Float16", "__bf16") and not self._declared_as_variable(name):
                    inject.append(name)
                continue
            inject.append(name)
        # user types seen as `Foo bar` that the file does not typedef itself
        declared = set()
        for i, t in enumerate(self.toks):
            if t.kind == "id" and t.text == "typedef":
                declared.add(i)
        for name in sorted(self.user_types - KNOWN_TYPES):
            if name in used and not re.search(r"typedef[^;]*\b%s\s*;" % re.escape(name), body) \
                    and not re.search(r"\b(struct|union|enum)\s+%s\b" % re.escape(name), body):
                inject.append(name)
        self.typedef_names = set(inject) | set(self.frags)
        prelude = "".join(f"typedef int {n};\n" for n in sorted(set(inject) | set(self.frags)))
        text = prelude + f'# 1 "{self.file}"\n' + body
        return Prepared(self.file, self.dialect, text, sorted(self.trivia, key=lambda x: (x.line, x.col)),
                        self.macros, self.frags, self.typedef_names, self.extern_c_ranges, self.toks, id_at,
                        self.quals, self.launches, brace_close, out_cols, self.using_alias)

    def _declared_as_variable(self, name: str) -> bool:
        sig = [t for t in self.toks if t.kind not in ("ws", "lcom", "bcom", "pp") and t.out != ""]
        for a, b, c in zip(sig, sig[1:], sig[2:]):
            if b.text == name and b.kind == "id" and (a.text in SCALAR_KEYWORDS or a.text == "*"
                                                     and False) and c.text in ("=", ";", ",", "[", ")"):
                return True
        return False


def prepare(text: str, file: str, dialect: str, parser) -> Prepared:
    from .cxx import rewrite_cxx
    layer = _Layer(text, file, dialect, parser)
    layer.internal_ranges = []     # (first, last line) of anonymous namespaces: file-local helpers
    layer.template_args = {}       # template function -> the one instantiation substituted
    layer.alias_attrs = {}         # using-alias -> its __attribute__((..)) text (vector types)
    layer.take_trivia()
    layer.expand_macros()
    rewrite_cxx(layer)
    layer.rewrite()
    prep = layer.assemble(set())
    prep.internal_ranges = layer.internal_ranges
    prep.template_args = layer.template_args
    prep.alias_attrs = layer.alias_attrs
    return prep
