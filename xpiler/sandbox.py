"""Run generated code in a child process with time and memory limits.

A candidate kernel may crash, hang or allocate without bound; none of that may take the tool
down.  ``run_limited`` runs one command in its own process group, kills the whole group on
time-out, caps the address space (or, under AddressSanitizer, whose shadow memory needs a
huge address space, the resident set through ``hard_rss_limit_mb``), and classifies the end.
"""
from __future__ import annotations

import os
import resource
import signal
import subprocess
from dataclasses import dataclass
from pathlib import Path

#: exit code our emulator runtimes use for errors they detect (barrier deadlock, bad memory space…)
RUNTIME_ERROR_RC = 97
#: exit code AddressSanitizer is told to use
ASAN_RC = 98


@dataclass
class RunOutcome:
    rc: int | None
    stdout: str
    stderr: str
    timed_out: bool = False
    reason: str = "ok"  # ok | timeout | crash | asan | memory | runtime-error | exit
    signal: int | None = None

    @property
    def ok(self) -> bool:
        return self.reason == "ok"


@dataclass(frozen=True)
class AsanReport:
    """What an AddressSanitizer report says, sorted into kinds a user acts on differently.

    ``kind``: ``out-of-bounds`` (heap/stack/global buffer overflow), ``null`` (a SEGV/BUS on an
    address in the zero page: a null pointer, maybe plus an offset), ``wild`` (a SEGV/BUS on any
    other unmapped address: an uninitialised or garbage pointer), ``lifetime`` (use after free or
    return or scope, double or invalid free), ``other`` (stack overflow, FPE, …)."""
    kind: str
    bug: str              # ASan's own name: heap-buffer-overflow, SEGV, heap-use-after-free, …
    access: str = ""      # READ / WRITE (+ size) when the report says
    address: str = ""
    where: str = ""       # file:line in function, from the first frame / SUMMARY

    def describe(self) -> str:
        parts = [self.bug]
        if self.access:
            parts.append(self.access.lower())
        if self.address:
            parts.append(f"at address {self.address}")
        if self.where:
            parts.append(f"in {self.where}")
        return " ".join(parts)


#: "use-after-poison" is an out-of-bounds access: the only memory our harness and runtimes poison by
#: hand is the guard zones around array arguments (runtime/common/xp_job.h, since 2026-12-05)
_OOB = ("heap-buffer-overflow", "stack-buffer-overflow", "global-buffer-overflow", "stack-buffer-underflow",
        "dynamic-stack-buffer-overflow", "container-overflow", "intra-object-overflow", "use-after-poison")
_LIFETIME = ("heap-use-after-free", "stack-use-after-return", "stack-use-after-scope", "double-free",
             "attempting double-free", "attempting free", "bad-free", "alloc-dealloc-mismatch")


def classify_asan(stderr: str) -> AsanReport | None:
    """Sort an AddressSanitizer report (None when ``stderr`` has none)."""
    import re
    m = re.search(r"ERROR: AddressSanitizer: (.+)", stderr)
    if not m:
        return None
    head = m.group(1).strip()
    bug = head.split(" on ")[0].split(" (")[0].split(":")[0].strip()
    addr = re.search(r"(?:address|unknown address) (0x[0-9a-fA-F]+)", head)
    address = addr.group(1) if addr else ""
    acc = re.search(r"\b(READ|WRITE) of size (\d+)", stderr)
    access = f"{acc.group(1)} of size {acc.group(2)}" if acc else ""
    if not access:
        acc = re.search(r"caused by a (READ|WRITE) memory access", stderr)
        access = acc.group(1) if acc else ""
    where = ""
    summ = re.search(r"SUMMARY: AddressSanitizer: \S+ (\S+?):(\d+)(?::\d+)? in (\S+)", stderr)
    if summ:
        where = f"{Path(summ.group(1)).name}:{summ.group(2)} ({summ.group(3)})"
    low = bug.lower()
    if any(low.startswith(k) for k in _OOB):
        kind = "out-of-bounds"
    elif any(low.startswith(k) for k in _LIFETIME):
        kind = "lifetime"
    elif low.startswith(("segv", "bus")) and "unknown address" in head:
        try:
            near_zero = int(address, 16) < 4096 if address else False
        except ValueError:
            near_zero = False
        kind = "null" if near_zero or "zero page" in stderr else "wild"
    else:
        kind = "other"
    return AsanReport(kind, bug, access, address, where)


def _limits(mem_mb: int | None, sanitized: bool):
    def apply():
        os.setsid()
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        if mem_mb and not sanitized:
            b = mem_mb * 1024 * 1024
            resource.setrlimit(resource.RLIMIT_AS, (b, b))
    return apply


def run_limited(argv: list[str], cwd: str | Path | None = None, timeout_s: float = 60.0,
                mem_mb: int | None = 4096, env: dict | None = None, sanitized: bool = False,
                input_bytes: bytes | None = None) -> RunOutcome:
    full_env = dict(os.environ)
    if env:
        full_env.update(env)
    if sanitized:
        # detect_stack_use_after_return pinned on: it is the default of newer libasan (gcc 13+), and the
        # emulators must behave the same whichever compiler built them
        opts = [f"exitcode={ASAN_RC}", "detect_leaks=0", "abort_on_error=0", "symbolize=1", "detect_stack_use_after_return=1",
                "allocator_may_return_null=1"]
        if mem_mb:
            opts += [f"hard_rss_limit_mb={mem_mb}", f"max_allocation_size_mb={mem_mb}"]
        full_env["ASAN_OPTIONS"] = ":".join(opts)
    proc = subprocess.Popen(argv, cwd=cwd, env=full_env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            stdin=subprocess.PIPE if input_bytes is not None else subprocess.DEVNULL,
                            preexec_fn=_limits(mem_mb, sanitized))
    try:
        out, err = proc.communicate(input=input_bytes, timeout=timeout_s)
    except subprocess.TimeoutExpired:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        out, err = proc.communicate()
        return RunOutcome(None, out.decode(errors="replace"), err.decode(errors="replace"), True, "timeout")
    so, se = out.decode(errors="replace"), err.decode(errors="replace")
    rc = proc.returncode
    if rc == 0:
        return RunOutcome(rc, so, se)
    if rc < 0:
        sig = -rc
        reason = "memory" if sig == signal.SIGKILL else "crash"
        return RunOutcome(rc, so, se, reason=reason, signal=sig)
    if rc == ASAN_RC or "ERROR: AddressSanitizer" in se:
        if "hard rss limit" in se or "allocation-size-too-big" in se or "out-of-memory" in se \
                or "requested allocation size" in se:
            return RunOutcome(rc, so, se, reason="memory")
        return RunOutcome(rc, so, se, reason="asan")
    if rc == RUNTIME_ERROR_RC:
        return RunOutcome(rc, so, se, reason="runtime-error")
    if "std::bad_alloc" in se or "Cannot allocate memory" in se or "out of memory" in se.lower():
        return RunOutcome(rc, so, se, reason="memory")
    return RunOutcome(rc, so, se, reason="exit")
