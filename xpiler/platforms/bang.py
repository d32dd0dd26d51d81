"""The bang dialect: Cambricon BANG C run on the CPU by xpiler's functional emulator.

There is no public BANG compiler (cncc) or MLU hardware, so a ``.mlu`` file is compiled by g++
(C++17) against ``runtime/bang/xp_bang.h``, after a textual :func:`prepare` that

* rewrites ``kernel<<<dim, ktype, queue>>>(args)`` into an emulator launch, and
* rewrites each ``__nram__`` / ``__wram__`` / ``__mlu_shared__`` declaration into a reference
  into the current core's (cluster's) flat on-chip arena, so every core has its own copy and the
  emulator can check memory spaces (``__memcpy`` directions, operand spaces of ``__bang_*``).

Line numbers are kept (every rewrite stays on its lines, and a ``#line`` directive follows the
prelude), so compiler errors point at the user's line.  See ``manuals/bang/emulator.md``.
"""
from __future__ import annotations

import re
import subprocess
import tempfile
from pathlib import Path

from ..diagnostics import XPError
from .base import blank_noncode, compile_cached, content_key, emulator_cxx, tree_digest, which
from ..verify.variants import flags as variant_flags
from .harness import COMMON_INCLUDE, RUNTIME_DIR, harness_callee, main_source, rename_entry

BANG_RUNTIME = RUNTIME_DIR / "bang"
BANG_HEADER = BANG_RUNTIME / "xp_bang.h"
BANG_INCLUDE = BANG_RUNTIME / "include"
SUBSTRATE = "emu:bang-cpu"

_QUALIFIERS = {"__nram__": "MEM_NRAM", "__wram__": "MEM_WRAM", "__mlu_shared__": "MEM_SRAM"}
_QUAL_RE = re.compile(r"\b(__nram__|__wram__|__mlu_shared__)\b")
_LAUNCH_RE = re.compile(r"\b([A-Za-z_]\w*(?:\s*<[^<>;(){}]*>)?)\s*<<<")
_ATTR_RE = re.compile(r"__attribute__\s*\(\((?:[^()]|\([^()]*\))*\)\)")
_DROP_WORDS = {"static", "inline", "__mlu_func__", "__mlu_device__"}


# ---------------------------------------------------------------------------- text helpers
def code_view(text: str) -> str:
    """``text`` with comments, literal contents and preprocessor lines blanked (same length,
    newlines kept), so structural scans never look inside them."""
    return blank_noncode(text, preprocessor=True)


def _match_close(code: str, i: int, open_c: str, close_c: str) -> int:
    """Index of the bracket closing the one at ``code[i]`` (or -1)."""
    depth = 0
    for j in range(i, len(code)):
        if code[j] == open_c:
            depth += 1
        elif code[j] == close_c:
            depth -= 1
            if depth == 0:
                return j
    return -1


def _split_top(s: str, sep: str) -> list[str]:
    parts, depth, cur = [], 0, []
    for ch in s:
        if ch in "([{<":
            depth += 1
        elif ch in ")]}>":
            depth -= 1
        if ch == sep and depth == 0:
            parts.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
    parts.append("".join(cur))
    return parts


def _keep_lines(original: str, replacement: str) -> str:
    missing = original.count("\n") - replacement.count("\n")
    return replacement + "\n" * max(missing, 0)


def _file_scope_map(code: str) -> dict[int, bool]:
    """For every qualifier position: is it at file scope (only ``extern "C"`` / namespace braces open)?"""
    result: dict[int, bool] = {}
    stack: list[bool] = []  # True = transparent brace (extern "C", namespace)
    quals = {m.start() for m in _QUAL_RE.finditer(code)}
    for i, ch in enumerate(code):
        if i in quals:
            result[i] = all(stack)
        if ch == "{":
            before = code[max(0, i - 120):i]
            stack.append(bool(re.search(r'(extern\s*"[^"]*"|\bnamespace(\s+[A-Za-z_]\w*)?)\s*$', before)))
        elif ch == "}" and stack:
            stack.pop()
    return result


def _parse_declarator(part: str) -> tuple[str, str, str] | None:
    """``'float *buf[N][M]'`` -> (type-with-stars, name, dims)."""
    s = part.strip()
    dims = ""
    while s.endswith("]"):
        depth, j = 0, len(s) - 1
        while j >= 0:
            if s[j] == "]":
                depth += 1
            elif s[j] == "[":
                depth -= 1
                if depth == 0:
                    break
            j -= 1
        if j < 0:
            return None
        dims = s[j:] + dims
        s = s[:j].rstrip()
    m = re.search(r"([A-Za-z_]\w*)$", s)
    if not m:
        return None
    name = m.group(1)
    ty = s[:m.start()].strip()
    dims = " ".join(dims.split())
    return ty, name, dims


class _Rewriter:
    def __init__(self, text: str):
        self.text = text
        self.code = code_view(text)
        self.edits: list[tuple[int, int, str]] = []
        self.counter = 0

    # ------------------------------------------------------------------ declarations
    def declarations(self) -> None:
        code = self.code
        scope = _file_scope_map(code)
        taken_until = -1
        for m in _QUAL_RE.finditer(code):
            q = m.start()
            if q < taken_until:
                continue
            res = self._declaration_at(m.group(1), q, scope.get(q, False))
            if res:
                start, end, repl = res
                self.edits.append((start, end, repl))
                taken_until = end

    def _declaration_at(self, qual: str, q: int, file_scope: bool):
        code = self.code
        # prefix words before the qualifier (e.g. `static`, or a type written first)
        window = code[max(0, q - 300):q]
        pm = re.search(r"((?:[A-Za-z_]\w*\s+)*)$", window)
        prefix = pm.group(1) if pm else ""
        start = q - len(prefix)
        k = start - 1
        while k >= 0 and code[k] in " \t\r\n":
            k -= 1
        if k >= 0 and code[k] not in ";{}:":
            return None  # a parameter, a cast, an expression: leave it (the macro erases the word)
        if k >= 1 and code[k] == ":" and code[k - 1] == ":":
            return None
        prefix_words = prefix.split()
        if "extern" in prefix_words or "typedef" in prefix_words:
            return None
        # the statement end
        j, depth = q + len(qual), 0
        while j < len(code):
            ch = code[j]
            if ch in "([":
                depth += 1
            elif ch in ")]":
                depth -= 1
            elif ch == "{" and depth == 0:
                return None  # struct definition or function: not an array declaration
            elif ch == ";" and depth == 0:
                break
            j += 1
        if j >= len(code):
            return None
        body = _ATTR_RE.sub(" ", code[q + len(qual):j])
        parts = _split_top(body, ",")
        if any("=" in p for p in parts):
            return None  # initialised declarations are left alone (rare; see manuals/bang/emulator.md)
        first = _parse_declarator(parts[0])
        if not first:
            return None
        ty0, name0, dims0 = first
        words = [w for w in prefix_words if w not in _DROP_WORDS]
        head = ty0.rstrip("*& \t")
        stars0 = ty0[len(head):].strip()
        base = " ".join(words + [w for w in head.split() if w not in _DROP_WORDS])
        if not base:
            return None
        decls = [(f"{base} {stars0}".strip(), name0, dims0)]
        for p in parts[1:]:
            d = _parse_declarator(p)
            if not d:
                return None
            decls.append((f"{base} {d[0]}".strip(), d[1], d[2]))
        mem = _QUALIFIERS[qual]
        out = []
        for ty, name, dims in decls:
            self.counter += 1
            slot = f"xpb_m{self.counter}_{name}"
            tname = f"xpb_t{self.counter}_{name}"
            # one typedef: a run-time bound (NRAM arrays sized at run time) is evaluated once
            tdef = f"typedef {ty} {tname}{dims};"
            args = f'::xpb::{mem}, sizeof({tname}), alignof({tname}), "{name}", __FILE__, __LINE__'
            if file_scope:
                out.append(f"{tdef} static ::xpb::StaticSlot {slot}({args}); "
                           f"static thread_local {tname}& {name} = *reinterpret_cast<{tname}*>({slot}.addr());")
            elif mem == "MEM_SRAM":
                out.append(f"{tdef} static ::xpb::StaticSlot {slot}({args}); "
                           f"{tname}& {name} = *reinterpret_cast<{tname}*>({slot}.addr());")
            else:
                out.append(f"{tdef} ::xpb::ScopedAlloc {slot}({args}); "
                           f"{tname}& {name} = *reinterpret_cast<{tname}*>({slot}.ptr);")
        original = self.text[start:j + 1]
        return start, j + 1, _keep_lines(original, " ".join(out))

    # ------------------------------------------------------------------------ launches
    def launches(self) -> None:
        code, text = self.code, self.text
        for m in _LAUNCH_RE.finditer(code):
            cfg_start = m.end()
            cfg_end = code.find(">>>", cfg_start)
            if cfg_end < 0:
                continue
            p = cfg_end + 3
            while p < len(code) and code[p] in " \t\r\n":
                p += 1
            if p >= len(code) or code[p] != "(":
                continue
            close = _match_close(code, p, "(", ")")
            if close < 0:
                continue
            name = " ".join(text[m.start(1):m.end(1)].split())
            cfg = text[cfg_start:cfg_end]
            args = text[p + 1:close]
            repl = f"xpb_launch_cnrt({cfg}, [&]() {{ {name}({args}); }})"
            self.edits.append((m.start(), close + 1, _keep_lines(text[m.start():close + 1], repl)))

    def apply(self) -> str:
        out = self.text
        for start, end, repl in sorted(self.edits, key=lambda e: e[0], reverse=True):
            out = out[:start] + repl + out[end:]
        return out


def prepare_source(text: str, filename: str) -> str:
    """Source text -> the C++ text g++ compiles under the emulator (same line numbers)."""
    rw = _Rewriter(text)
    rw.declarations()
    rw.launches()
    body = rw.apply()
    fname = filename.replace("\\", "\\\\").replace('"', '\\"')
    prelude = [f"/* prepared by xpiler for the BANG emulator (runtime/bang/xp_bang.h): {fname} */"]
    if re.search(r"\b__sync_all\b", rw.code):
        prelude.append("[[maybe_unused]] static const int xpb_prelude_sync_all = (::xpb::g_sync_all_used = 1);")
    prelude.append(f'#line 1 "{fname}"')
    return "\n".join(prelude) + "\n" + body


def _gxx() -> str | None:
    return which(emulator_cxx())


def _gxx_version() -> str:
    try:
        return subprocess.run(["g++", "-dumpfullversion"], capture_output=True, text=True, timeout=30).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "?"


class BangPlatform:
    dialect = "bang"
    header = BANG_HEADER

    def substrate(self) -> str:
        return SUBSTRATE

    def doctor(self) -> list[tuple[str, bool, str]]:
        gxx = _gxx()
        emu = (SUBSTRATE, bool(gxx) and BANG_HEADER.is_file(),
               f"g++ {_gxx_version()} + runtime/bang/xp_bang.h (functional emulator, no timing)" if gxx
               else "g++ not found (apt-get install g++)")
        cncc = which("cncc")
        hw = ("hw:mlu", False, "cncc found, but no MLU device is visible" if cncc
              else "no public Cambricon MLU hardware or cncc compiler")
        return [emu, hw]

    def prepare(self, text: str, filename: str) -> str:
        return prepare_source(text, filename)

    @staticmethod
    def compile_flags(sanitize: bool) -> list[str]:
        flags = ["-std=c++17", "-O1", "-pthread", "-w", "-include", str(BANG_HEADER), f"-I{BANG_INCLUDE}",
                 f"-I{COMMON_INCLUDE}"]
        if sanitize:
            flags += ["-fsanitize=address", "-fno-omit-frame-pointer", "-g"]
        return flags

    def build(self, src: Path, spec, workdir: Path, *, sanitize: bool, defines: dict[str, str] | None = None) -> Path:
        if not _gxx():
            raise XPError("XP2004", what="bang", why="g++ not found")
        src = Path(src)
        # a kernel named exp/sin/abs is renamed for the build (no clash with libm; harness.py)
        prepared = self.prepare(rename_entry(src.read_text(), spec.entry), src.name)
        main = main_source(spec, "kernel.prepared.cpp", callee=harness_callee(src.read_text(), spec.entry))
        flags = self.compile_flags(sanitize) + variant_flags(defines)
        cxx = emulator_cxx()
        key = content_key("bang", cxx, prepared, main, " ".join(flags), tree_digest(BANG_RUNTIME),
                          tree_digest(COMMON_INCLUDE))
        return compile_cached(key, {"kernel.prepared.cpp": prepared, "main.cpp": main},
                              [cxx, *flags, "main.cpp", "-o", "run"], "XP2002", src)

    def compile_check(self, src: Path, *, arch: str | None = None) -> dict:
        """Compile the kernel against the emulator header with strict warnings (no run)."""
        src = Path(src)
        if not _gxx():
            return {"ok": False, "log": "g++ not found", "arch": arch or SUBSTRATE, "resources": {}}
        prepared = self.prepare(src.read_text(), src.name)
        with tempfile.TemporaryDirectory(prefix="xpb-check-") as d:
            f = Path(d) / "kernel.prepared.cpp"
            f.write_text(prepared)
            argv = ["g++", "-std=c++17", "-fsyntax-only", "-Wall", "-Wextra", "-Werror=return-type",
                    "-Werror=narrowing", "-Wno-unused-parameter", "-pthread",
                    "-include", str(BANG_HEADER), f"-I{BANG_INCLUDE}", "-x", "c++", str(f)]
            try:
                p = subprocess.run(argv, capture_output=True, text=True, timeout=300)
            except subprocess.TimeoutExpired:
                return {"ok": False, "log": "compile check timed out", "arch": arch or SUBSTRATE, "resources": {}}
        log = (p.stdout + p.stderr).replace(str(f), src.name)
        return {"ok": p.returncode == 0, "log": log, "arch": arch or SUBSTRATE,
                "resources": {"nram_bytes_per_core": 512 * 1024, "wram_bytes_per_core": 1024 * 1024,
                              "sram_bytes_per_cluster": 2 * 1024 * 1024}}
