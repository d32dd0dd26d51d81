"""``xpiler spec --infer``: propose a spec from what a source file says about its buffers.

Sources of facts, in order: a host launcher (CUDA ``<<<grid, block>>>``, HIP
``hipLaunchKernelGGL``, BANG ``<<<dim, ktype, queue>>>``) with the allocation sizes of its
device buffers (``cudaMalloc``/``hipMalloc``/``cnrtMalloc``) and the direction of its copies;
for plain C, the entry function's subscripts and compile-time-constant loop bounds.  What
cannot be inferred is written with a ``# TODO`` and reported as XP1030 notes.
"""
from __future__ import annotations

import re
from pathlib import Path

from .diagnostics import XPError
from .spec import dialect_of

_CTYPE_DTYPE = [
    (r"\b(half|__half)\b", "float16"), (r"\b(bfloat16|__nv_bfloat16|bfloat16_t|hip_bfloat16)\b", "bfloat16"),
    (r"\bdouble\b", "float64"), (r"\bfloat\b", "float32"), (r"\buint8_t|unsigned char\b", "uint8"),
    (r"\bint8_t|\bchar\b", "int8"), (r"\bint16_t|\bshort\b", "int16"), (r"\bint64_t|long long\b", "int64"),
    (r"\bint32_t|\bint\b|\bunsigned\b", "int32"),
]


def _dtype_of(ctype: str) -> str | None:
    for pat, dt in _CTYPE_DTYPE:
        if re.search(pat, ctype):
            return dt if dt != "float64" else None
    return None


def _strip_comments(text: str) -> str:
    text = re.sub(r"/\*.*?\*/", lambda m: "\n" * m.group(0).count("\n"), text, flags=re.S)
    return re.sub(r"//[^\n]*", "", text)


def _split_args(s: str) -> list[str]:
    out, depth, cur = [], 0, ""
    for ch in s:
        if ch in "([{<":
            depth += 1
        elif ch in ")]}>":
            depth -= 1
        if ch == "," and depth == 0:
            out.append(cur.strip())
            cur = ""
        else:
            cur += ch
    if cur.strip():
        out.append(cur.strip())
    return out


def _params(text: str, name: str) -> list[tuple[str, str]] | None:
    m = re.search(rf"\b{re.escape(name)}\s*\(([^)]*)\)\s*\{{", text)
    if not m:
        return None
    params = []
    for p in _split_args(m.group(1)):
        if p in ("", "void"):
            continue
        pm = re.match(r"(.*?)([A-Za-z_]\w*)\s*(\[\s*\w*\s*\])?$", p.strip())
        if pm:
            ctype = pm.group(1).strip() + ("*" if pm.group(3) else "")
            params.append((ctype, pm.group(2)))
    return params


def _consts(text: str) -> dict[str, int]:
    out = {}
    for m in re.finditer(r"#define\s+([A-Za-z_]\w*)\s+\(?(\d+)\)?\s*$", text, re.M):
        out[m.group(1)] = int(m.group(2))
    for m in re.finditer(r"\b(?:const|constexpr)\s+(?:int|size_t|unsigned|long)\s+([A-Za-z_]\w*)\s*=\s*(\d+)\s*;", text):
        out[m.group(1)] = int(m.group(2))
    return out


def _idents(expr: str) -> list[str]:
    return [i for i in re.findall(r"\b[A-Za-z_]\w*\b", expr) if i not in ("sizeof", "cdiv", "min", "max")]


def _clean_size(expr: str) -> str:
    e = re.sub(r"\(\s*(size_t|int|unsigned|long)\s*\)", "", expr)
    e = re.sub(r"\*?\s*sizeof\s*\([^)]*\)\s*\*?", "*", e).strip().strip("*").strip()
    e = re.sub(r"\*\s*\*", "*", e)
    return e


class _Notes(list):
    def add(self, what: str, file: Path, line: int | None = None):
        self.append(XPError("XP1030", what=what, file=file, line=line))


def infer_spec(src: Path) -> tuple[str, list[XPError]]:
    src = Path(src)
    if not src.is_file():
        raise XPError("XP1201", path=src, file=src)
    dialect = dialect_of(src)
    if dialect is None:
        raise XPError("XP1202", path=src, file=src)
    from .signature import check_source_text
    from .source_text import read_source
    raw = read_source(src)
    check_source_text(raw, src)  # a binary or empty file says so (XP1108/XP1114), as parse/test/migrate do
    text = _strip_comments(raw)
    notes = _Notes()
    if dialect == "c":
        return _infer_c(src, text, notes)
    return _infer_launcher(src, text, dialect, notes)


def _line_of(text: str, pos: int) -> int:
    return text.count("\n", 0, pos) + 1


def _emit(entry, dialect, sizes, launch_lines, args, notes_src) -> str:
    out = [f'entry = "{entry}"', f'dialect = "{dialect}"', "", "[sizes]"]
    for k, (v, known) in sizes.items():
        out.append(f"{k} = {v}" + ("" if known else "  # TODO: value not in the source; pick one"))
    if launch_lines:
        out += ["", "[launch]"] + launch_lines
    for a in args:
        out += ["", "[[args]]", f'name = "{a["name"]}"', f'dtype = "{a["dtype"]}"' +
                ("" if a.get("dtype_known", True) else "  # TODO: type not recognised")]
        if a["role"] != "scalar":
            out.append("shape = [" + ", ".join(f'"{s}"' if isinstance(s, str) else str(s) for s in a["shape"]) + "]"
                       + ("" if a.get("shape_known", True) else "  # TODO: size not inferred"))
        out.append(f'role = "{a["role"]}"' + ("" if a.get("role_known", True) else "  # TODO: check the role"))
        if a["role"] == "scalar":
            v = a["value"]
            out.append(f"value = {v!r}".replace("'", '"') + ("" if a.get("value_known", True) else "  # TODO"))
    return "\n".join(out) + "\n"


def _infer_launcher(src: Path, text: str, dialect: str, notes: _Notes):
    launch = None
    m = re.search(r"\b([A-Za-z_]\w*)\s*<<<(.*?)>>>\s*\((.*?)\)\s*;", text, re.S)
    if m:
        kname, cfg, args = m.group(1), _split_args(m.group(2)), _split_args(m.group(3))
        launch = (kname, cfg, args, m.start())
    else:
        m = re.search(r"hipLaunchKernelGGL\s*\((.*?)\)\s*;", text, re.S)
        if m:
            parts = _split_args(m.group(1))
            if len(parts) >= 5:
                kname = re.sub(r"HIP_KERNEL_NAME\((.*)\)", r"\1", parts[0]).strip()
                launch = (kname, parts[1:5], parts[5:], m.start())
    consts = _consts(text)
    if launch is None:
        # no host launcher: take the first kernel and leave sizes open
        km = re.search(r"(__global__|__mlu_global__)[^(]*?\b([A-Za-z_]\w*)\s*\(", text)
        if not km:
            raise XPError("XP1017", entry="(a kernel)", path=src, file=src)
        kname = km.group(2)
        notes.add("the launch configuration and buffer sizes (no host launcher in the file)", src)
        cfg, largs, lpos = [], None, km.start()
    else:
        kname, cfg, largs, lpos = launch
    params = _params(text, kname) or []
    if not params:
        notes.add(f"the parameter list of '{kname}'", src)
    sizes: dict[str, tuple[int, bool]] = {}

    def add_size(name):
        if name not in sizes:
            if name in consts:
                sizes[name] = (consts[name], True)
            else:
                sizes[name] = (64, False)

    args = []
    for i, (ctype, pname) in enumerate(params):
        dt = _dtype_of(ctype)
        actual = largs[i] if largs and i < len(largs) else pname
        if "*" in ctype:
            shape, known = ["TODO"], False
            mm = re.search(rf"(?:cudaMalloc|hipMalloc|cnrtMalloc)\s*\(\s*(?:\(\s*void\s*\*\*\s*\)\s*)?&\s*{re.escape(actual)}\s*,\s*(.*?)\)\s*;",
                           text, re.S)
            if mm:
                e = _clean_size(mm.group(1))
                for n in _idents(e):
                    add_size(n)
                shape, known = [e if _idents(e) else int(eval(e or "1", {}, {}))], True
            else:
                notes.add(f"the size of buffer '{pname}' (no allocation found for '{actual}')", src)
            to_dev = re.search(rf"(?:cudaMemcpy|hipMemcpy|cnrtMemcpy)\s*\(\s*{re.escape(actual)}\s*,.*?(HostToDevice|HostToDev)", text, re.S)
            to_host = re.search(rf"(?:cudaMemcpy|hipMemcpy|cnrtMemcpy)\s*\([^,]*,\s*{re.escape(actual)}\s*,.*?(DeviceToHost|DevToHost)", text, re.S)
            if to_dev and to_host:
                role, rk = "inout", True
            elif to_host:
                role, rk = "out", True
            elif to_dev or "const" in ctype:
                role, rk = "in", True
            else:
                role, rk = "in", False
                notes.add(f"the role of '{pname}' (no copies found)", src)
            args.append({"name": pname, "dtype": dt or "float32", "dtype_known": dt is not None, "shape": shape,
                         "shape_known": known, "role": role, "role_known": rk})
        else:
            expr = actual
            if re.fullmatch(r"[\w\s+\-*/%()]+", expr) and _idents(expr):
                for n in _idents(expr):
                    add_size(n)
                args.append({"name": pname, "dtype": dt or "int32", "role": "scalar", "value": expr})
            elif re.fullmatch(r"-?[\d.]+f?", expr):
                v = float(expr.rstrip("f")) if "." in expr else int(expr)
                args.append({"name": pname, "dtype": dt or "int32", "role": "scalar", "value": v})
            else:
                add_size(pname)
                args.append({"name": pname, "dtype": dt or "int32", "role": "scalar", "value": pname,
                             "value_known": False})
    launch_lines = []
    if dialect in ("cuda", "hip"):
        for key, expr in (("grid", cfg[0] if cfg else None), ("block", cfg[1] if len(cfg) > 1 else None)):
            dims = _dim3(text, expr, lpos) if expr else None
            if dims is None:
                notes.add(f"launch {key}", src)
                dims = [1, 1, 1]
            for d in dims:
                for n in _idents(str(d)):
                    add_size(n)
            launch_lines.append(f"{key} = [" + ", ".join(f'"{d}"' if isinstance(d, str) else str(d) for d in dims) + "]")
        if len(cfg) > 2 and cfg[2].strip() not in ("0", ""):
            launch_lines.append(f'shared_bytes = "{_clean_size(cfg[2])}"  # TODO: check')
    else:
        dm = re.search(r"cnrtDim3_t\s+\w+\s*=\s*\{([^}]*)\}", text)
        dims = [d.strip() for d in dm.group(1).split(",")] if dm else None
        if not dims:
            notes.add("task dimensions (cnrtDim3_t)", src)
            dims = ["4", "1", "1"]
        launch_lines.append("dim = [" + ", ".join(d if d.isdigit() else f'"{d}"' for d in dims) + "]")
        ft = re.search(r"CNRT_FUNC_TYPE_(BLOCK|UNION\d)", text)
        launch_lines.append(f'func_type = "{ft.group(1).lower() if ft else "block"}"')
        if not ft:
            notes.add("the function type (CNRT_FUNC_TYPE_*)", src)
    for name, (v, known) in sizes.items():
        if not known:
            notes.add(f"a value for size '{name}' (64 proposed)", src)
    return _emit(kname, dialect, sizes, launch_lines, args, src), list(notes)


def _dim3(text: str, expr: str, before: int):
    expr = expr.strip()
    m = re.fullmatch(r"dim3\s*\((.*)\)", expr, re.S)
    if m:
        parts = _split_args(m.group(1))
    elif re.fullmatch(r"[A-Za-z_]\w*", expr):
        dm = None
        for dm2 in re.finditer(rf"dim3\s+{re.escape(expr)}\s*(?:\((.*?)\)|=\s*dim3\s*\((.*?)\)|\{{(.*?)\}})\s*;", text[:before], re.S):
            dm = dm2
        if dm is None:
            im = re.search(rf"\b(?:int|unsigned|size_t)\s+{re.escape(expr)}\s*=\s*(.*?);", text[:before])
            if not im:
                return None
            parts = [im.group(1)]
        else:
            parts = _split_args(dm.group(1) or dm.group(2) or dm.group(3))
    else:
        parts = [expr]
    out = []
    for p in parts[:3]:
        p = re.sub(r"\(\s*(int|unsigned)\s*\)", "", p).strip()
        out.append(int(p) if p.isdigit() else p)
    while len(out) < 3:
        out.append(1)
    return out


def _infer_c(src: Path, text: str, notes: _Notes):
    consts = _consts(text)
    funcs = [m for m in re.finditer(r"^(?!static)[A-Za-z_][\w\s\*]*?\b([A-Za-z_]\w*)\s*\(([^)]*)\)\s*\{", text, re.M)
             if m.group(1) not in ("if", "for", "while", "switch", "main")]
    if not funcs:
        raise XPError("XP1017", entry="(a C function)", path=src, file=src)
    fm = funcs[-1]  # entry points usually come after their helpers
    name = fm.group(1)
    params = _params(text, name) or []
    body = text[fm.end():]
    bounds = {}
    for lm in re.finditer(r"for\s*\(\s*(?:int|long|size_t|unsigned)?\s*([A-Za-z_]\w*)\s*=\s*0\s*;\s*\1\s*<\s*([^;]+);", body):
        bounds[lm.group(1)] = lm.group(2).strip()
    sizes: dict[str, tuple[int, bool]] = {}
    args = []
    scalars = {p for t, p in params if "*" not in t}
    for ctype, pname in params:
        dt = _dtype_of(ctype)
        if "*" not in ctype:
            sizes.setdefault(pname, (64, False))
            args.append({"name": pname, "dtype": dt or "int32", "role": "scalar", "value": pname,
                         "value_known": False})
            continue
        extent = None
        for sm in re.finditer(rf"\b{re.escape(pname)}\s*\[([^\]]+)\]", body):
            idx = sm.group(1)
            env = {}
            ok = True
            for ident in _idents(idx):
                if ident in bounds:
                    b = bounds[ident]
                    try:
                        env[ident] = eval(b, {}, {**consts, **{s: sizes.get(s, (64, False))[0] for s in scalars}}) - 1
                    except Exception:
                        ok = False
                elif ident in consts:
                    env[ident] = consts[ident]
                elif ident in scalars:
                    env[ident] = sizes.get(ident, (64, False))[0]
                else:
                    ok = False
            if ok:
                try:
                    v = int(eval(idx.replace("/", "//"), {}, env)) + 1
                    extent = max(extent or 0, v)
                except Exception:
                    pass
        written = re.search(rf"\b{re.escape(pname)}\s*\[[^\]]+\]\s*(=|\+=|-=|\*=)(?!=)", body)
        if "const" in ctype or not written:
            role = "in"
        else:
            role = "out" if written.group(1) == "=" else "inout"
        if extent is None:
            notes.add(f"the extent of '{pname}' (no constant-bounded subscript)", src)
        args.append({"name": pname, "dtype": dt or "float32", "dtype_known": dt is not None,
                     "shape": [extent or 64], "shape_known": extent is not None, "role": role,
                     "role_known": True})
    for n, (v, known) in sizes.items():
        if not known:
            notes.add(f"a value for scalar '{n}' (64 proposed; array extents assume it)", src)
    return _emit(name, "c", sizes, [], args, src), list(notes)
