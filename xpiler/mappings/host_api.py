"""Host runtime API mapping: CUDA runtime ↔ HIP runtime ↔ CNRT (BANG) ↔ plain C.

One row per concept. Each dialect's cell is a call template over named operands (``$dst``,
``$src``…) or ``None`` when the dialect has no such call. ``status`` says how well the
mapping holds for each dialect (HIPIFY's flags are the model):

- ``supported``: same meaning, translated mechanically;
- ``partial``: translated, with a difference the notes explain (e.g. a no-op on the CPU);
- ``unsupported``: no counterpart; a migration that meets it reports XP4101 with the location.

``reads`` lists further forms of a row that a SOURCE may hold in a dialect and that the matcher
recognises (never printed): the statements people write in c host code (``p = malloc(n)``,
``free(p)``, ``aligned_alloc``…) beside the expression form the c column prints. Operands a read
form binds that the row does not have (``$align``) are dropped. In c host code the three copy
rows read alike; ``xpiler.migration.host_c`` tells them apart by which buffers the launcher
allocated and hands to the kernel.

The same table produces ``docs/api-mapping.md`` (``python -m xpiler.mappings.host_api``).
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

DIALECTS = ("cuda", "hip", "bang", "c")


@dataclass(frozen=True)
class HostApi:
    concept: str
    operands: tuple[str, ...]
    forms: dict[str, str | None]
    status: dict[str, str] = field(default_factory=dict)
    notes: str = ""
    reads: dict[str, tuple[str, ...]] = field(default_factory=dict)

    def status_for(self, dialect: str) -> str:
        if self.forms.get(dialect) is None:
            return "unsupported"
        return self.status.get(dialect, "supported")


def _row(concept, operands, cuda, hip, bang, c, status=None, notes="", reads=None):
    return HostApi(concept, tuple(operands), {"cuda": cuda, "hip": hip, "bang": bang, "c": c}, status or {}, notes,
                   {d: tuple(f) for d, f in (reads or {}).items()})


_C_COPY = ("Read from c: the three copies are one memcpy; a buffer the launcher allocates and gives to the "
           "kernel is on the device, any other on the host, and the two sides pick the row.")

TABLE: list[HostApi] = [
    _row("include runtime header", [], "#include <cuda_runtime.h>", "#include <hip/hip_runtime.h>",
         "#include <cnrt.h>", "#include <stdlib.h>\n#include <string.h>"),
    _row("allocate device memory", ["ptr", "bytes"], "cudaMalloc((void**)&$ptr, $bytes)",
         "hipMalloc((void**)&$ptr, $bytes)", "cnrtMalloc((void**)&$ptr, $bytes)", "($ptr = malloc($bytes), 0)",
         {"c": "partial"}, "c: device memory is host memory. Read from c: an alignment asked of aligned_alloc, "
         "posix_memalign or _mm_malloc is dropped (the device allocators align to at least 256 bytes).",
         reads={"c": ("$ptr = malloc($bytes)", "$ptr = aligned_alloc($align, $bytes)",
                      "$ptr = _mm_malloc($bytes, $align)", "posix_memalign((void**)&$ptr, $align, $bytes)")}),
    _row("allocate zeroed device memory", ["ptr", "count", "size"],
         "(cudaMalloc((void**)&$ptr, $count * $size), cudaMemset($ptr, 0, $count * $size))",
         "(hipMalloc((void**)&$ptr, $count * $size), hipMemset($ptr, 0, $count * $size))",
         "(cnrtMalloc((void**)&$ptr, $count * $size), cnrtMemset($ptr, 0, $count * $size))",
         "($ptr = calloc($count, $size), 0)", {"cuda": "partial", "hip": "partial", "bang": "partial"},
         "cuda, hip, bang: two calls (allocate, then fill with zero bytes).",
         reads={"c": ("$ptr = calloc($count, $size)",)}),
    _row("free device memory", ["ptr"], "cudaFree($ptr)", "hipFree($ptr)", "cnrtFree($ptr)", "(free($ptr), 0)",
         reads={"c": ("free($ptr)", "_mm_free($ptr)")}),
    _row("copy host to device", ["dst", "src", "bytes"], "cudaMemcpy($dst, $src, $bytes, cudaMemcpyHostToDevice)",
         "hipMemcpy($dst, $src, $bytes, hipMemcpyHostToDevice)", "cnrtMemcpy($dst, $src, $bytes, cnrtMemcpyHostToDev)",
         "(memcpy($dst, $src, $bytes), 0)", notes=_C_COPY, reads={"c": ("memcpy($dst, $src, $bytes)",)}),
    _row("copy device to host", ["dst", "src", "bytes"], "cudaMemcpy($dst, $src, $bytes, cudaMemcpyDeviceToHost)",
         "hipMemcpy($dst, $src, $bytes, hipMemcpyDeviceToHost)", "cnrtMemcpy($dst, $src, $bytes, cnrtMemcpyDevToHost)",
         "(memcpy($dst, $src, $bytes), 0)", notes=_C_COPY, reads={"c": ("memcpy($dst, $src, $bytes)",)}),
    _row("copy device to device", ["dst", "src", "bytes"], "cudaMemcpy($dst, $src, $bytes, cudaMemcpyDeviceToDevice)",
         "hipMemcpy($dst, $src, $bytes, hipMemcpyDeviceToDevice)", "cnrtMemcpy($dst, $src, $bytes, cnrtMemcpyDevToDev)",
         "(memcpy($dst, $src, $bytes), 0)", notes=_C_COPY, reads={"c": ("memcpy($dst, $src, $bytes)",)}),
    _row("fill device memory", ["ptr", "value", "bytes"], "cudaMemset($ptr, $value, $bytes)",
         "hipMemset($ptr, $value, $bytes)", "cnrtMemset($ptr, $value, $bytes)", "(memset($ptr, $value, $bytes), 0)",
         reads={"c": ("memset($ptr, $value, $bytes)",)}),
    _row("wait for the device", [], "cudaDeviceSynchronize()", "hipDeviceSynchronize()", "cnrtSyncDevice()", "0",
         {"bang": "partial", "c": "partial"},
         "c: kernels are synchronous calls. bang: a migrated launcher syncs the queue of each launch, so the "
         "call is left as a comment there (the CPU emulator has no cnrtSyncDevice)."),
    _row("last launch error", [], "cudaGetLastError()", "hipGetLastError()", "cnrtGetLastError()", "0",
         {"bang": "partial", "c": "partial"}, "c: no asynchronous errors."),
    _row("error string", ["err"], "cudaGetErrorString($err)", "hipGetErrorString($err)", "cnrtGetErrorStr($err)",
         "\"no error\"", {"c": "partial"}),
    _row("success value", [], "cudaSuccess", "hipSuccess", "cnrtSuccess", "0"),
    _row("error type", [], "cudaError_t", "hipError_t", "cnrtRet_t", "int"),
    _row("stream type", [], "cudaStream_t", "hipStream_t", "cnrtQueue_t", "int", {"c": "partial"}),
    _row("create stream", ["stream"], "cudaStreamCreate(&$stream)", "hipStreamCreate(&$stream)",
         "cnrtQueueCreate(&$stream)", "($stream = 0, 0)", {"c": "partial"}),
    _row("synchronize stream", ["stream"], "cudaStreamSynchronize($stream)", "hipStreamSynchronize($stream)",
         "cnrtQueueSync($stream)", "0", {"c": "partial"}),
    _row("destroy stream", ["stream"], "cudaStreamDestroy($stream)", "hipStreamDestroy($stream)",
         "cnrtQueueDestroy($stream)", "0", {"c": "partial"}),
    _row("event type", [], "cudaEvent_t", "hipEvent_t", "cnrtNotifier_t", None, notes="c: time with clock_gettime instead."),
    _row("create event", ["ev"], "cudaEventCreate(&$ev)", "hipEventCreate(&$ev)", "cnrtNotifierCreate(&$ev)", None),
    _row("record event", ["ev", "stream"], "cudaEventRecord($ev, $stream)", "hipEventRecord($ev, $stream)",
         "cnrtPlaceNotifier($ev, $stream)", None),
    _row("elapsed time between events", ["ms", "start", "stop"], "cudaEventElapsedTime(&$ms, $start, $stop)",
         "hipEventElapsedTime(&$ms, $start, $stop)", "cnrtNotifierDuration($start, $stop, &$ms)", None,
         {"bang": "partial"}, "bang: CNRT reports microseconds; divide by 1000."),
    _row("device count", ["n"], "cudaGetDeviceCount(&$n)", "hipGetDeviceCount(&$n)", "cnrtGetDeviceCount(&$n)",
         "($n = 1, 0)", {"c": "partial"}),
    _row("select device", ["dev"], "cudaSetDevice($dev)", "hipSetDevice($dev)", "cnrtSetDevice($dev)", "0",
         {"c": "partial"}),
    _row("launch dimensions type", [], "dim3", "dim3", "cnrtDim3_t", None,
         {"bang": "partial"}, "bang: task dimensions, not a grid of blocks; chosen by the binding pass."),
    _row("launch kernel", ["kernel", "config", "args"], "$kernel<<<$config>>>($args)",
         "hipLaunchKernelGGL($kernel, $config, $args)", "$kernel<<<$config>>>($args)", "$kernel($args)",
         {"bang": "partial", "c": "partial"},
         "The configuration is rebuilt by the binding pass: grid/block (cuda, hip: + shared bytes, stream), "
         "task dim/function type/queue (bang); a c kernel is a plain call."),
]

BY_CONCEPT = {r.concept: r for r in TABLE}

_NAME = re.compile(r"^[\w:]+")


def lookup(dialect: str, call_name: str) -> list[HostApi]:
    """Rows whose form in ``dialect`` starts with the identifier ``call_name``."""
    out = []
    for r in TABLE:
        f = r.forms.get(dialect)
        if f:
            m = _NAME.match(f.lstrip("(#"))
            if m and m.group(0) == call_name:
                out.append(r)
    return out


def render(row: HostApi, dialect: str, **operands: str) -> str:
    form = row.forms.get(dialect)
    if form is None:
        raise KeyError(f"{row.concept} has no {dialect} form")
    for k in row.operands:
        form = form.replace(f"${k}", operands.get(k, k))
    return form


def render_markdown() -> str:
    lines = ["# Host API mapping", "",
             "Generated from `xpiler/mappings/host_api.py` by `python -m xpiler.mappings.host_api > docs/api-mapping.md`.",
             "Status: **supported** (same meaning), *partial* (translated with a difference, see notes), "
             "— (no counterpart: a migration that meets it reports XP4101). *Also read*: further source forms "
             "the matcher recognises in a dialect (never printed).", "",
             "| concept | cuda | hip | bang (CNRT) | c | notes |", "|---|---|---|---|---|---|"]
    for r in TABLE:
        cells = []
        for d in DIALECTS:
            f = r.forms.get(d)
            if f is None:
                cells.append("—")
            else:
                tag = "" if r.status_for(d) == "supported" else " *(partial)*"
                cells.append("`" + f.replace("|", "\\|").replace("\n", "` `") + "`" + tag)
        reads = " ".join(f"*Also read in {d}*: " + ", ".join("`" + f.replace("|", "\\|") + "`" for f in fs) + "."
                         for d, fs in r.reads.items())
        notes = " ".join(x for x in (r.notes, reads) if x)
        lines.append(f"| {r.concept} | " + " | ".join(cells) + f" | {notes} |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":  # pragma: no cover
    import sys
    sys.stdout.write(render_markdown())
