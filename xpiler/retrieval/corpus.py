"""Loading manual sections: one markdown file per section, with front matter.

    ---
    id: cuda.shfl.down_sync
    target: cuda
    topic: warp-collectives
    signature: "T __shfl_down_sync(unsigned mask, T var, unsigned delta, int width = warpSize)"
    passes: [tensorize, binding]      # optional
    ---
    Body: a few sentences in our own words.

The front matter is a small YAML subset (``key: value`` lines; values are bare words,
single- or double-quoted strings, or ``[a, b]`` lists; ``#`` starts a comment outside
quotes), parsed here so that no YAML library is needed.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

TARGETS = ("cuda", "hip", "bang", "c")
REQUIRED = ("id", "target", "topic", "signature")


class ManualError(ValueError):
    """A manual file that does not follow the section format."""

    def __init__(self, message: str, path: Path | str | None = None):
        self.path = str(path) if path is not None else None
        super().__init__(f"{self.path}: {message}" if self.path else message)


@dataclass(frozen=True)
class Section:
    id: str
    target: str
    topic: str
    signature: str
    body: str
    passes: tuple[str, ...] = ()
    path: str = ""
    extra: dict = field(default_factory=dict, compare=False, hash=False)

    def text(self) -> str:
        """The section as an LLM prompt excerpt: id, signature, body."""
        return f"[{self.id}] {self.signature}\n{self.body}"


def _strip_comment(value: str) -> str:
    quote = None
    for i, ch in enumerate(value):
        if quote:
            if ch == "\\" and quote == '"':
                continue
            if ch == quote and (i == 0 or value[i - 1] != "\\" or quote == "'"):
                quote = None
        elif ch in "\"'":
            quote = ch
        elif ch == "#" and (i == 0 or value[i - 1].isspace()):
            return value[:i].rstrip()
    return value.rstrip()


def _scalar(value: str, path) -> str:
    value = value.strip()
    if len(value) >= 2 and value[0] == value[-1] == '"':
        try:
            return json.loads(value)
        except json.JSONDecodeError as e:
            raise ManualError(f"bad double-quoted string {value!r}: {e}", path) from None
    if len(value) >= 2 and value[0] == value[-1] == "'":
        return value[1:-1].replace("''", "'")
    return value


def _split_list(inner: str) -> list[str]:
    items, cur, quote = [], [], None
    for ch in inner:
        if quote:
            cur.append(ch)
            if ch == quote:
                quote = None
        elif ch in "\"'":
            quote = ch
            cur.append(ch)
        elif ch == ",":
            items.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
    items.append("".join(cur))
    return [i for i in (x.strip() for x in items) if i]


def parse_front_matter(text: str, path: Path | str | None = None) -> tuple[dict, str]:
    """Split a section file into (front-matter dict, body). Raises ManualError."""
    lines = text.splitlines()
    if not lines or lines[0].strip() != "---":
        raise ManualError("missing front matter (the file must start with a '---' line)", path)
    try:
        end = next(i for i in range(1, len(lines)) if lines[i].strip() == "---")
    except StopIteration:
        raise ManualError("front matter is not closed by a '---' line", path) from None
    meta: dict = {}
    for n, line in enumerate(lines[1:end], start=2):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        key, sep, value = line.partition(":")
        key = key.strip()
        if not sep or not key or not key.replace("_", "").replace("-", "").isalnum():
            raise ManualError(f"line {n}: expected 'key: value', got {line!r}", path)
        if key in meta:
            raise ManualError(f"line {n}: duplicate key {key!r}", path)
        value = _strip_comment(value.strip())
        if value.startswith("["):
            if not value.endswith("]"):
                raise ManualError(f"line {n}: unterminated list for {key!r}", path)
            meta[key] = [_scalar(v, path) for v in _split_list(value[1:-1])]
        else:
            meta[key] = _scalar(value, path)
    body = "\n".join(lines[end + 1:]).strip()
    return meta, body


def section_from_text(text: str, path: Path | str | None = None) -> Section:
    meta, body = parse_front_matter(text, path)
    for key in REQUIRED:
        if not isinstance(meta.get(key), str) or not meta[key].strip():
            raise ManualError(f"front matter needs a non-empty '{key}'", path)
    if meta["target"] not in TARGETS:
        raise ManualError(f"unknown target {meta['target']!r} (use one of {', '.join(TARGETS)})", path)
    if not meta["id"].startswith(meta["target"] + "."):
        raise ManualError(f"id {meta['id']!r} must start with its target '{meta['target']}.'", path)
    if not body:
        raise ManualError("section body is empty", path)
    passes = meta.get("passes", [])
    if isinstance(passes, str):
        passes = [passes]
    extra = {k: v for k, v in meta.items() if k not in REQUIRED and k != "passes"}
    return Section(id=meta["id"].strip(), target=meta["target"], topic=meta["topic"].strip(),
                   signature=meta["signature"].strip(), body=body, passes=tuple(passes),
                   path=str(path or ""), extra=extra)


def load_section(path: Path | str) -> Section:
    path = Path(path)
    return section_from_text(path.read_text(encoding="utf-8"), path)


def manuals_root() -> Path:
    """The manuals folder: the installed ``xpiler.manuals`` package, else the repository's."""
    try:
        from xpiler import manuals  # installed layout (setup.py maps manuals/ -> xpiler.manuals)
        return Path(manuals.ROOT)
    except ImportError:
        return Path(__file__).resolve().parents[2] / "manuals"


def load_manuals(root: Path | str | None = None, targets: tuple[str, ...] | list[str] | None = None,
                 strict: bool = True) -> list[Section]:
    """All sections under root/<target>/*.md, sorted by id.

    strict: a malformed file or a duplicate id raises ManualError; otherwise it is skipped
    (the index must keep working while another author is still writing a folder)."""
    root = Path(root) if root is not None else manuals_root()
    sections: list[Section] = []
    seen: dict[str, str] = {}
    for target in targets or TARGETS:
        folder = root / target
        if not folder.is_dir():
            continue
        for path in sorted(folder.glob("*.md")):
            if path.name.lower() in ("readme.md", "index.md"):
                continue
            try:
                sec = load_section(path)
                if sec.target != target:
                    raise ManualError(f"target {sec.target!r} does not match folder {target!r}", path)
                if sec.id in seen:
                    raise ManualError(f"duplicate id {sec.id!r} (also in {seen[sec.id]})", path)
            except ManualError:
                if strict:
                    raise
                continue
            seen[sec.id] = str(path)
            sections.append(sec)
    sections.sort(key=lambda s: (TARGETS.index(s.target), s.id))
    return sections
