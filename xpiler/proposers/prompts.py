"""Meta-prompts: one template per pass in ``passes/prompts/<pass>.md``, filled with facts.

Placeholders are ``{name}`` for the names in :data:`FIELDS` only, so the C/CUDA braces of the
worked examples need no escaping. Facts are computed here from what the tool knows (the
spec, the loops in the program, the intrinsics in play, the chosen pass parameters) plus
whatever the pass put in ``PassContext.facts``.
"""
from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Sequence

from .intrinsics import signatures_for
from .protocol import PASSES, PassContext
from .screen import FENCE_LANG, strip_comments_and_strings

FIELDS = ("pass_name", "source_dialect", "target", "entry", "language", "params", "facts", "excerpts",
          "program")

SYSTEM_PROMPT = (
    "You are the rewriting step of xpiler, a tool that migrates tensor kernels between CUDA, HIP, "
    "BANG C (Cambricon MLU) and C with Intel AVX-512 intrinsics. You are asked to apply exactly one "
    "transformation pass to a program. Every answer is compiled and run against a reference, so an "
    "answer must be one complete, compilable program in a single fenced code block, with the same "
    "function name and parameter list, and nothing invented: use only the intrinsics whose signatures "
    "you are given or that the program already uses.")


def prompts_dir() -> Path:
    """passes/prompts in a checkout, or xpiler/passes/prompts when installed."""
    try:
        from importlib.resources import files
        p = Path(str(files("xpiler.passes"))) / "prompts"
        if p.is_dir():
            return p
    except Exception:
        pass
    return Path(__file__).resolve().parent.parent.parent / "passes" / "prompts"


def load_template(pass_name: str, directory: str | Path | None = None) -> str:
    if pass_name not in PASSES:
        raise KeyError(f"unknown pass '{pass_name}' (passes: {', '.join(PASSES)})")
    d = Path(directory) if directory else prompts_dir()
    path = d / f"{pass_name}.md"
    if not path.is_file():
        raise FileNotFoundError(f"meta-prompt for pass '{pass_name}' not found at {path}")
    return path.read_text(encoding="utf-8")


def render(template: str, values: dict[str, str]) -> str:
    """Replace ``{field}`` for the known fields; every other brace is left alone."""
    pat = re.compile(r"\{(" + "|".join(FIELDS) + r")\}")
    return pat.sub(lambda m: str(values.get(m.group(1), "")), template)


def template_fields(template: str) -> set[str]:
    return set(re.findall(r"\{(" + "|".join(FIELDS) + r")\}", template))


_LOOP = re.compile(r"\bfor\s*\(\s*(?:int|long|unsigned|size_t|int32_t|int64_t)?\s*([A-Za-z_]\w*)\s*=\s*([^;]+?)\s*;"
                   r"\s*\1\s*(<=|<)\s*([^;]+?)\s*;\s*(\1\s*\+\+|\+\+\s*\1|\1\s*\+=\s*([^)]+?))\s*\)")


def loop_facts(program: str) -> list[str]:
    """One line per recognisable counted loop: variable, bounds, step and trip count expression."""
    clean, _ = strip_comments_and_strings(program)
    out = []
    for m in _LOOP.finditer(clean):
        var, lo, op, hi, step = m.group(1), m.group(2).strip(), m.group(3), m.group(4).strip(), (m.group(6) or "1").strip()
        upper = f"({hi}) + 1" if op == "<=" else hi
        if step == "1":
            trip = f"{upper}" if lo == "0" else f"{upper} - ({lo})"
        else:
            trip = f"cdiv({upper} - ({lo}), {step})" if lo != "0" else f"cdiv({upper}, {step})"
        out.append(f"loop `{var}` from {lo} while {var} {op} {hi}, step {step}: trip count {trip}")
    return out


def spec_facts(spec: Any) -> list[str]:
    """Sizes of every instance, buffer shapes/dtypes/bytes of the base instance, launch config."""
    if spec is None:
        return []
    out = []
    try:
        insts = spec.instances()
    except Exception:
        insts = []
    for inst in insts:
        out.append(f"instance `{inst.name}`: " + ", ".join(f"{k}={v}" for k, v in inst.sizes.items()))
    if insts:
        base = insts[0]
        for a in getattr(spec, "args", []):
            if a.role == "scalar":
                out.append(f"argument `{a.name}`: scalar {a.dtype} = {base.scalars.get(a.name, a.value)}")
            else:
                shape = base.shapes.get(a.name)
                n = base.numel(a.name) if shape is not None else None
                from ..dtypes import itemsize  # local: dtypes belongs to the core
                nbytes = n * itemsize(a.dtype) if n is not None else None
                out.append(f"argument `{a.name}`: {a.role} {a.dtype}{list(shape) if shape else ''}"
                           + (f", {nbytes} bytes in `{base.name}`" if nbytes else ""))
    launch = getattr(spec, "launch", None)
    if launch:
        out.append("launch: " + ", ".join(f"{k}={v}" for k, v in launch.items()))
    return out


def _bullets(lines: Sequence[str]) -> str:
    return "\n".join(f"- {l}" for l in lines) if lines else "- (none)"


def build_facts(pass_name: str, program: str, target: str, ctx: PassContext) -> list[str]:
    facts: list[str] = []
    if ctx.entry:
        facts.append(f"entry function: `{ctx.entry}` (keep its name and parameter list)")
    try:
        facts += spec_facts(ctx.spec)
    except Exception:
        pass
    facts += loop_facts(program)
    for k, v in (ctx.facts or {}).items():
        facts.append(f"{k}: {v}")
    sigs = signatures_for(program, target, pass_name, ctx.intrinsics)
    facts += [f"intrinsic {s}" for s in sigs]
    return facts


def format_excerpts(excerpts: Sequence[tuple[str, str]]) -> str:
    if not excerpts:
        return "(no manual excerpts retrieved)"
    return "\n\n".join(f"[{sid}]\n{text.strip()}" for sid, text in excerpts)


def build_messages(pass_name: str, program: str, target: str, ctx: PassContext,
                   excerpts: Sequence[tuple[str, str]], *, template: str | None = None) -> list[dict]:
    """The chat for one pass: the shared system prompt, then the pass's filled meta-prompt."""
    tpl = template if template is not None else load_template(pass_name)
    src = ctx.source_dialect or target
    out = ctx.out_dialect or target
    values = {
        "pass_name": pass_name, "source_dialect": src, "target": out, "entry": ctx.entry or "(see program)",
        "language": FENCE_LANG.get(out, "c"),
        "params": ", ".join(f"{k}={v}" for k, v in (ctx.params or {}).items()) or "(choose sensible values)",
        "facts": _bullets(build_facts(pass_name, program, out, ctx)),
        "excerpts": format_excerpts(excerpts),
        "program": program.rstrip("\n"),
    }
    tpl = _with_example(tpl, ctx.example)
    user = render(tpl, values)
    return [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": user}]


_EXAMPLE = re.compile(r"<!--\s*example\s*-->\n?(.*?)<!--\s*/example\s*-->\n?", re.S)


def _with_example(tpl: str, example: str | None) -> str:
    """The worked example sits between <!-- example --> markers; a context example replaces it."""
    if example is None:
        return _EXAMPLE.sub(lambda m: m.group(1), tpl)
    return _EXAMPLE.sub(lambda m: example.rstrip("\n") + "\n", tpl)


def template_example(tpl: str) -> str | None:
    m = _EXAMPLE.search(tpl)
    return m.group(1) if m else None


def feedback_message(verdict: str, detail: str, language: str) -> str:
    return (f"Your previous answer was rejected ({verdict}):\n{detail.strip()[:3000]}\n\n"
            f"Fix it and answer again with the complete program in one ```{language} block, nothing else.")
