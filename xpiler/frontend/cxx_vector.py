"""``std::vector`` used as a scratch buffer of fixed size, read as a local array (C++ front end).

Kernels written as C++ for the CPU keep per-row scratch in a ``std::vector<T>`` sized once at
its declaration (an accumulator cleared with ``std::fill``, a row of scores, a folded scale).
That use is a run-time sized local array; this module rewrites it, on the dialect layer's
tokens (like cxx.py; lines never move), into C the rest of the front end reads:

* ``std::vector<T> v(n);`` -> ``const long v_len = (n); T v[v_len]; for (..) v[i] = 0;``
  (``(n, x)`` fills with ``x``; ``std::vector<T> v;`` directly followed by ``v.resize(n)`` /
  ``v.resize(n, x)`` / ``v.assign(n, x)`` is the same; several declarators are allowed);
* ``v[i]`` stays; ``v.size()`` -> ``v_len``; ``v.data()`` -> ``v``; ``v.empty()``,
  ``v.front()``, ``v.back()``, ``v.at(i)`` -> the array expressions; ``v.begin()`` -> ``v``,
  ``v.end()`` -> ``(v + v_len)`` (what ``std::copy`` and friends take, lowered later);
* ``std::fill(v.begin(), v.end(), x);`` -> an index loop;
* ``for (auto& e : v) body`` / ``for (T e : v)`` -> an index loop with ``e`` read as ``v[k]``;
* a helper's ``std::vector<T>& p`` / ``const std::vector<T>& p`` parameter -> ``T* p, long p_len``,
  each call passing ``v, v_len``.

Everything else about a vector is refused (XP1102 naming the member or the use, with its line):
members that change the size (push_back, insert, erase, clear, resize or assign after the
declaration...), copies, vectors passed by value or returned, vectors at file scope, element
types that are not scalars or pointers, and a vector parameter of a function nothing in the file
calls (the kernel entry: the harness passes arrays as pointers, ``T*``).

Only c-dialect sources are read this way (C++ written for the CPU). In the host code of a
cuda/hip/bang file a vector is a staging buffer whose size may be far beyond a stack array, and
it stays refused there (cxx.py's XP1102 naming the container).
"""
from __future__ import annotations

from dataclasses import dataclass

_SCALARS = {"float", "double", "int", "unsigned", "long", "short", "char", "signed", "bool", "size_t", "half",
            "__half", "int8_t", "uint8_t", "int16_t", "uint16_t", "int32_t", "uint32_t", "int64_t", "uint64_t",
            "ptrdiff_t", "const", "*"}
_RESIZING = {"push_back", "emplace_back", "pop_back", "insert", "emplace", "erase", "clear", "resize", "assign",
             "reserve", "shrink_to_fit", "swap"}
_ASSIGN_OPS = {"=", "+=", "-=", "*=", "/=", "%=", "&=", "|=", "^=", "<<=", ">>=", "++", "--"}


@dataclass
class _Vec:
    name: str
    elem: str
    length: str       # the C name of its length
    lo: int           # token range where the name means this vector
    hi: int
    decl: int         # the token of its name in the declaration
    init: tuple = None  # (token holding the first-value loop, last token of the declaration, text without it)
    owner: tuple = None  # (helper, parameter position) of a parameter


def lower_vectors(layer, T) -> None:
    from .cxx import _param_lists, _split_params    # (cxx.py imports this module)
    S = T.S
    if layer.dialect != "c":
        return     # host code of cuda/hip/bang files: a staging vector may be far too large for a stack array
    heads = [i for i in range(len(S)) if _is_head(T, i) and not S[i].done]
    if not heads:
        return
    taken = {t.text for t in S if t.kind == "id"}

    def fresh(base):
        name, k = base, 1
        while name in taken:
            name, k = f"{base}{k}", k + 1
        taken.add(name)
        return name

    def refuse(tok, what):
        raise layer.err("XP1102", tok, construct=what)

    # the innermost real '{' around each token (namespace / extern "C" braces are blanked already)
    encl, stack = [], []
    for i, t in enumerate(S):
        encl.append(stack[-1] if stack else None)
        if t.kind == "punct" and t.text == "{" and t.out != "":
            stack.append(i)
        elif t.kind == "punct" and t.text == "}" and t.out != "" and stack:
            stack.pop()
    funcs = _param_lists(T)
    vecs: list[_Vec] = []
    handled: set[int] = set()       # name tokens already rewritten (declarations, call arguments...)
    by_ref: dict[str, set] = {}     # helper -> positions of its vector parameters

    def elem_of(i):
        cl = T.match_angle(i + 3)
        words = [S[j].o if S[j].done else T.text(j) for j in range(i + 4, cl)]
        text = " ".join(w for w in words if w not in ("std", "::")).replace(" *", "*")
        if not words or T.text(cl) != ">" or any(w not in _SCALARS and w not in ("std", "::")
                                                 and w not in layer.user_types and not w.endswith("_t")
                                                 for w in words):
            src = " ".join(T.text(j) for j in range(i + 4, cl)) + (">" if T.text(cl) == ">>" else "")
            src = src.replace(" :: ", "::").replace(" < ", "<").replace(" >", ">").replace("< ", "<")
            refuse(S[i], f"std::vector<{src}> (only vectors of scalars or pointers are read as local arrays)")
        return text, cl

    # ---------------------------------------------------------------- parameters of helpers
    in_params = {}
    for name_i, lp, rp, end in funcs:
        for pos, (a, b) in enumerate(_split_params(T, lp, rp)):
            for j in range(a, b + 1):
                if _is_head(T, j):
                    in_params[j] = (name_i, lp, rp, end, pos, a, b)
    for i in heads:
        if i not in in_params:
            continue
        name_i, lp, rp, end, pos, a, b = in_params[i]
        fname = T.text(name_i)
        elem, cl = elem_of(i)
        const = any(T.text(j) == "const" for j in range(a, i))
        rest = [T.text(j) for j in range(cl + 1, b + 1)]
        if rest[:1] == ["&&"] or rest[:1] == ["*"] or len(rest) != 2 or rest[0] != "&" or T.kind(b) != "id":
            how = {"&&": "by rvalue reference", "*": "by pointer"}.get(rest[0] if rest else "", "by value (a copy)")
            refuse(S[i], f"std::vector parameter of '{fname}' passed {how}; only `std::vector<T>&` and "
                         "`const std::vector<T>&` parameters of helpers are read (as `T*` plus a length)")
        pname = T.text(b)
        length = fresh(f"{pname}_len")
        T.set(a, f"{'const ' if const else ''}{elem}* {pname}, long {length}")
        T.blank(a + 1, b)
        by_ref.setdefault(fname, set()).add(pos)
        if T.text(end) == "{":
            vecs.append(_Vec(pname, elem, length, end, T.match(end, "{", "}"), b, owner=(fname, pos)))
    decl_names = {name_i for name_i, *_ in funcs}
    for fname in by_ref:
        if not any(u.kind == "id" and u.text == fname and T.text(j + 1) == "(" and j not in decl_names
                   for j, u in enumerate(S)):
            first = next(name_i for name_i, *_ in funcs if T.text(name_i) == fname)
            refuse(S[first], f"std::vector parameter of '{fname}', which nothing in the file calls (the kernel "
                             "entry?): the test harness passes arrays as pointers; declare it `T*` with a length")

    def sized(name, elem, length, idx, args, rp):
        """The text after the size: the array and the loop that gives every element its first
        value (0, or the value argument); returns how to take the loop out again (dead_init)."""
        head = f"); {elem} {name}[{length}];"
        loop = f" for (long {idx} = 0; {idx} < {length}; ++{idx}) {name}[{idx}] = "
        if len(args) == 2:
            at = args[0][1] + 1               # the comma before the value
            T.set(at, head + loop + "(")
            T.set(rp, ");")
        else:
            at = rp
            T.set(rp, head + loop + "0;")
        return at, rp, head

    # ---------------------------------------------------------------- local declarations
    for i in heads:
        if i in in_params:
            continue
        if encl[i] is None:
            refuse(S[i], "std::vector at file scope or as a return type (only local vectors sized where "
                         "they are declared, and helper parameters by reference, are read as arrays)")
        st = i
        while T.text(st - 1) in ("const",):
            st -= 1
        if T.text(st - 1) not in (";", "{", "}", ")") or T.text(i - 1) == "(":
            refuse(S[i], "std::vector in an expression, a cast or a lambda parameter (only local declarations and "
                         "helper parameters by reference are read)")
        elem, cl = elem_of(i)
        T.blank(st, cl)
        scope_end = T.match(encl[i], "{", "}")
        k = cl + 1
        while True:
            if T.text(k) in ("&", "&&", "*"):
                refuse(S[k], "a reference or pointer to a std::vector declared in a body (use the vector's "
                             "own name, or `T* p = v.data();`)")
            if T.kind(k) != "id":
                refuse(S[k] if k < len(S) else S[i], "std::vector declaration (expected a name)")
            name = T.text(k)
            length = fresh(f"{name}_len")
            idx = fresh(f"{name}_i")
            nxt = T.text(k + 1)
            if nxt == "(":
                rp = T.match(k + 1, "(", ")")
                args = _split_params(T, k + 1, rp)
                _check_ctor_args(layer, T, args, vecs, k, refuse, name)
                T.set(k, f"const long {length} =")
                init = sized(name, elem, length, idx, args, rp)
                end = rp + 1
            elif nxt == ";" and T.text(k + 2) == name and T.text(k + 3) == "." and T.text(k + 4) in (
                    "resize", "assign") and T.text(k + 5) == "(":
                # `std::vector<T> v; v.resize(n[, x]);` / `v.assign(n, x);`: sized at once
                member = T.text(k + 4)
                rp = T.match(k + 5, "(", ")")
                args = _split_params(T, k + 5, rp)
                if member == "assign" and len(args) != 2:
                    refuse(S[k + 4], "std::vector::assign with iterators or a list (only assign(n, value) right "
                                     "after the declaration is read)")
                _check_ctor_args(layer, T, args, vecs, k + 2, refuse, name)
                T.set(k, "")
                T.set(k + 1, "")
                T.set(k + 2, f"const long {length} =")
                T.blank(k + 3, k + 4)
                init = sized(name, elem, length, idx, args, rp)
                handled.add(k + 2)
                end = rp + 1
            elif nxt in ("{", "="):
                refuse(S[k + 1], f"std::vector '{name}' initialised with '{nxt}' (a list or a copy); only "
                                 "`std::vector<T> v(n)` and `v(n, value)` are read as local arrays")
            else:
                refuse(S[k], f"std::vector '{name}' declared without a size (only vectors sized at the declaration, "
                             "`v(n)`, `v(n, value)` or a `v.resize(n)` / `v.assign(n, value)` right after it, are "
                             "read as local arrays)")
            vecs.append(_Vec(name, elem, length, k, scope_end, k, init))
            handled.add(k)
            if T.text(end) == ",":
                T.set(end, "")
                k = end + 1
                continue
            if T.text(end) != ";":
                refuse(S[end] if end < len(S) else S[i], "std::vector declaration")
            T.set(end, "")       # each declarator's text ends with its own ';'
            break

    def vec_at(j, name):
        best = None
        for v in vecs:
            if v.name == name and v.lo <= j <= v.hi and (best is None or v.lo > best.lo):
                best = v
        return best

    # statements that write every element of a vector before reading any: the token of the
    # vector's name in them -> (first, last token of the statement)
    full_writes: dict[int, tuple] = {}
    calls: dict[int, tuple] = {}            # argument token -> (helper, position, call name token, ';')

    # ---------------------------------------------------------------- range-for over a vector
    for i, t in enumerate(S):
        if not (t.kind == "id" and t.text == "for" and T.text(i + 1) == "(" and not t.done):
            continue
        rp = T.match(i + 1, "(", ")")
        colon = _top_colon(T, i + 1, rp)
        if colon is None or colon + 2 != rp or T.kind(colon + 1) != "id":
            continue
        v = vec_at(colon + 1, T.text(colon + 1))
        if v is None:
            continue
        words = [T.text(j) for j in range(i + 2, colon)]
        if not words or T.kind(colon - 1) != "id" or "&&" in words:
            refuse(S[i], f"range-for over std::vector '{v.name}' with the loop variable '{' '.join(words)}'")
        ename = T.text(colon - 1)
        ref = "&" in words
        bs, be = _stmt_range(T, rp + 1)
        if bs is None:
            refuse(S[rp + 1] if rp + 1 < len(S) else S[i], f"range-for over std::vector '{v.name}': body")
        body = [T.text(j) for j in range(bs, be + 1)]
        if body[:1] == ["{"] and body[-1:] == ["}"]:
            body = body[1:-1]
        if ref and len(body) >= 4 and body[:2] == [ename, "="] and body[-1] == ";" and not (
                {ename, v.name, "=", "++", "--"} & set(body[2:-1])):
            full_writes[colon + 1] = (i, be)        # `for (auto& e : v) e = x;` writes every element
        k = fresh(f"{v.name}_k")
        T.set(i + 1, f"(long {k} = 0; {k} < {v.length}; ++{k})")
        T.blank(i + 2, rp)
        for j in range(bs, be + 1):
            u = S[j]
            if u.kind == "id" and u.text == ename and not u.done and T.text(j - 1) not in (".", "->", "::"):
                if not ref and (T.text(j + 1) in _ASSIGN_OPS or T.text(j - 1) in ("++", "--", "&")):
                    refuse(u, f"range-for over std::vector '{v.name}' that changes its copy '{ename}' (write "
                              "`auto& " + ename + "` or use an index loop)")
                T.set(j, f"{v.name}[{k}]")
        handled.add(colon + 1)

    # ---------------------------------------------------------------- std::fill(v.begin(), v.end(), x);
    for i, t in enumerate(S):
        if not (t.kind == "id" and t.text == "std" and T.text(i + 1) == "::" and T.text(i + 2) == "fill"
                and T.text(i + 3) == "(" and not t.done):
            continue
        rp = T.match(i + 3, "(", ")")
        args = _split_params(T, i + 3, rp)
        if len(args) != 3 or T.text(rp + 1) != ";":
            continue
        (a0, a1), (b0, b1) = args[0], args[1]
        if not (a1 - a0 == 4 and b1 - b0 == 4 and T.text(a0) == T.text(b0) and T.kind(a0) == "id"
                and [T.text(j) for j in range(a0 + 1, a1 + 1)] == [".", "begin", "(", ")"]
                and [T.text(j) for j in range(b0 + 1, b1 + 1)] == [".", "end", "(", ")"]):
            continue
        v = vec_at(a0, T.text(a0))
        if v is None:
            continue
        k = fresh(f"{v.name}_i")
        T.set(i, f"for (long {k} = 0; {k} < {v.length}; ++{k}) {v.name}[{k}] = (")
        T.blank(i + 1, b1 + 1)
        handled.update((a0, b0))
        if not any(T.text(j) == v.name for j in range(b1 + 1, rp)):
            full_writes[a0] = (i, rp + 1)

    # ---------------------------------------------------------------- calls of helpers with vector parameters
    for i, t in enumerate(S):
        if t.kind != "id" or t.text not in by_ref or T.text(i + 1) != "(" or i in decl_names:
            continue
        rp = T.match(i + 1, "(", ")")
        for pos, (a, b) in enumerate(_split_params(T, i + 1, rp)):
            if pos not in by_ref[t.text]:
                continue
            v = vec_at(a, T.text(a)) if a == b and T.kind(a) == "id" else None
            if v is None:
                refuse(S[a], f"argument {pos + 1} of '{t.text}' (a std::vector parameter) is not a local "
                             "vector or a vector parameter")
            T.set(a, f"{v.name}, {v.length}")
            handled.add(a)
            if T.text(rp + 1) == ";":
                calls[a] = (t.text, pos, i, rp + 1)

    # a helper whose first statement on a vector parameter is a full write (the range-for above)
    # makes a call passing the vector a full write of the caller's vector
    helper_writes = set()
    for v in vecs:
        if v.owner is None:
            continue
        first = next((j for j in range(v.lo + 1, v.hi) if T.text(j) == v.name and T.kind(j) == "id"
                      and T.text(j - 1) not in (".", "->", "::")), None)
        w0 = full_writes.get(first, (None,))[0]
        if w0 is not None and encl[w0] == v.lo and T.text(w0 - 1) in (";", "{", "}") and not any(
                T.text(j) in ("return", "goto") for j in range(v.lo, w0)):
            helper_writes.add(v.owner)     # a statement of the body, no return before it
    for a, (fname, pos, i0, semi) in calls.items():
        others = [j for j in range(i0 + 2, semi - 1) if j != a and T.text(j) == T.text(a)]
        if (fname, pos) in helper_writes and not others and T.kind(i0) == "id" and not S[i0].done:
            full_writes[a] = (i0, semi)

    # ---------------------------------------------------------------- a declaration's first values never read
    for v in vecs:
        if v.init is None:
            continue
        first = next((j for j in range(v.decl + 1, v.hi) if T.text(j) == v.name and T.kind(j) == "id"
                      and T.text(j - 1) not in (".", "->", "::")), None)
        if first not in full_writes or not _first_write_dominates(T, v, *full_writes[first], encl):
            continue
        # the values the declaration gives are overwritten before any read, and no value of the
        # vector outlives a pass through the block of that first full write: the array is
        # declared at the write, with no first-value loop (so a loop around that block has
        # nothing carried in it to prove private)
        at, last, head = v.init
        T.set(at, ");")
        T.blank(at + 1, last)
        w0 = full_writes[first][0]
        S[w0].out = f"{v.elem} {v.name}[{v.length}]; " + S[w0].o
        S[w0].done = True

    # ---------------------------------------------------------------- every other use of a vector name
    for j, u in enumerate(S):
        if u.kind != "id" or j in handled or u.done or T.text(j - 1) in (".", "->", "::"):
            continue
        v = vec_at(j, u.text)
        if v is None or j == v.decl:
            continue
        nxt = T.text(j + 1)
        if nxt == "[":
            continue
        if nxt == "." and T.kind(j + 2) == "id":
            m = T.text(j + 2)
            call = T.text(j + 3) == "("
            rp = T.match(j + 3, "(", ")") if call else None
            nargs = len(_split_params(T, j + 3, rp)) if call else -1
            simple = {"size": v.length, "data": v.name, "begin": v.name, "end": f"({v.name} + {v.length})",
                      "empty": f"({v.length} == 0)", "front": f"{v.name}[0]",
                      "back": f"{v.name}[{v.length} - 1]"}
            if m in simple and nargs == 0:
                T.set(j, simple[m])
                T.blank(j + 1, rp)
                continue
            if m == "at" and nargs == 1:
                T.set(j, v.name)
                T.blank(j + 1, j + 2)
                T.set(j + 3, "[")
                T.set(rp, "]")
                continue
            if m in _RESIZING:
                refuse(S[j + 2], f"std::vector::{m} on '{v.name}' (it changes the vector's size or contents "
                                 "as a whole; only vectors sized once at their declaration are read as arrays)")
            refuse(S[j + 2], f"std::vector::{m} on '{v.name}' (not mapped; size, data, begin, end, empty, front, "
                             "back, at and [] are)")
        what = "assigned" if nxt in _ASSIGN_OPS else "used as a whole value (copied, compared or passed on)"
        refuse(u, f"std::vector '{v.name}' {what}; only its elements, size() and data() are read (pass "
                  "`v.data()` to a function taking `T*`)")

    # every vector was read: its header is not needed by the C the printers write
    layer.trivia = [x for x in layer.trivia if not (x.kind == "include" and "<vector>" in x.text)]


def _first_write_dominates(T, v, f0, f1, encl):
    """True when the statement at tokens f0..f1, which writes every element of the local vector
    v, runs before anything can read one: it stands directly in a braced block B, every other
    mention of v lies in B after it, and nothing jumps into B (no goto in the file, no case
    label in B). Then whenever control reaches a use, the write ran earlier in the same pass
    through B, and the values the declaration gave are dead."""
    S = T.S
    b = encl[f0]
    if b is None or T.text(f0 - 1) not in (";", "{", "}") or any(t.text == "goto" for t in S):
        return False
    b_end = T.match(b, "{", "}")
    if any(T.text(j) in ("case", "default") for j in range(b, b_end)):
        return False
    for j in range(v.decl + 1, v.hi + 1):
        if f0 <= j <= f1:
            continue
        u = S[j]
        if u.kind == "id" and u.text == v.name and T.text(j - 1) not in (".", "->", "::"):
            if not (f1 < j < b_end):
                return False
    return True


def _is_head(T, i):
    return T.text(i) == "std" and T.kind(i) == "id" and T.text(i + 1) == "::" and T.text(i + 2) == "vector" \
        and T.text(i + 3) == "<"


def _top_colon(T, lp, rp):
    """The index of a range-for ':' at depth 0 in a for header (None for an ordinary for)."""
    depth = 0
    found = None
    for j in range(lp + 1, rp):
        tx = T.text(j)
        if tx in ("(", "[", "{"):
            depth += 1
        elif tx in (")", "]", "}"):
            depth -= 1
        elif depth == 0 and tx == ";":
            return None
        elif depth == 0 and tx == ":" and found is None:
            found = j
    return found


def _stmt_range(T, i):
    """(first, last) token of the statement starting at i; (None, None) when not recognised."""
    tx = T.text(i)
    if tx is None:
        return None, None
    if tx == "{":
        return i, T.match(i, "{", "}")
    if tx in ("for", "while", "switch") and T.text(i + 1) == "(":
        s, e = _stmt_range(T, T.match(i + 1, "(", ")") + 1)
        return (i, e) if s is not None else (None, None)
    if tx == "if" and T.text(i + 1) == "(":
        s, e = _stmt_range(T, T.match(i + 1, "(", ")") + 1)
        if s is None:
            return None, None
        if T.text(e + 1) == "else":
            s2, e2 = _stmt_range(T, e + 2)
            return (i, e2) if s2 is not None else (None, None)
        return i, e
    if tx == "do":
        s, e = _stmt_range(T, i + 1)
        if s is None or T.text(e + 1) != "while" or T.text(e + 2) != "(":
            return None, None
        cl = T.match(e + 2, "(", ")")
        return (i, cl + 1) if T.text(cl + 1) == ";" else (None, None)
    depth = 0
    for j in range(i, len(T.S)):
        t = T.text(j)
        if t in ("(", "[", "{"):
            depth += 1
        elif t in (")", "]", "}"):
            depth -= 1
            if depth < 0:
                return None, None
        elif t == ";" and depth == 0:
            return i, j
    return None, None


_PTR_WORDS = _SCALARS | {"void", "const"}


def _check_ctor_args(layer, T, args, vecs, at, refuse, name):
    """``v(n)`` / ``v(n, x)`` only: not a copy ``v(w)``, not a range ``v(p, p + n)`` / ``v(w.begin(), ..)``."""
    S = T.S
    if len(args) not in (1, 2):
        refuse(S[at], f"std::vector '{name}' constructed from {len(args)} arguments (only (n) and (n, value) are "
                      "read)")
    a, b = args[0]
    words = [T.text(j) for j in range(a, b + 1)]
    if any(w in ("begin", "end", "data", "cbegin", "cend") for w in words) or (
            a == b and any(v.name == words[0] and v.lo <= at <= v.hi for v in vecs)):
        refuse(S[a], f"std::vector '{name}' constructed as a copy of another vector or from iterators")
    if len(args) == 2:
        # `std::vector<T> v(p, p + n)` (a pointer range) reads like (n, value): refuse when a name in
        # the first argument is declared as a pointer anywhere in the file
        ptrs = {T.text(j + 1) for j in range(1, len(S) - 1)
                if T.text(j) == "*" and T.kind(j + 1) == "id" and (T.text(j - 1) in _PTR_WORDS
                                                                    or T.text(j - 1) in layer.user_types
                                                                    or (T.text(j - 1) or "").endswith("_t"))}
        for j in range(a, b + 1):
            if T.kind(j) == "id" and T.text(j) in ptrs:
                refuse(S[a], f"std::vector '{name}' constructed from '{T.text(j)}', a pointer (an iterator range "
                              "is not read; only (n) and (n, value) are)")
        c, d = args[1]
        for j in range(c, d + 1):
            if T.text(j) in ("=", "+=", "-=", "++", "--"):
                refuse(S[j], f"std::vector '{name}' filled with a value that has a side effect")
