"""Diagnostics: one table of stable IDs, and the typed error that carries one.

Every message a user can get from xpiler has an ID here (SYCLomatic's DPCT10xx table is the
model).  ``docs/diagnostics.md`` is generated from this table (``python -m xpiler.diagnostics``)
and a test checks that the file is current.

Ranges:
  XP1000-1099  kernel spec (TOML)             XP1100-1199  front ends / parsing
  XP1200-1299  command line and files          XP2000-2099  compilers / toolchains
  XP2100-2199  verification verdicts           XP3000-3049  SIMT emulator runtime
  XP3050-3099  BANG emulator runtime           XP4000-4099  passes and migration
  XP9000-9099  internal errors
Rows of the emulator and front-end ranges live in ``DIAGNOSTICS.txt`` files beside those
components (lines ``ID|severity|message|hint``) and are merged in here.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
import sys


@dataclass(frozen=True)
class DiagInfo:
    code: str
    severity: str  # error | warning | note
    message: str  # template with {placeholders}
    hint: str


_ROWS: list[tuple[str, str, str, str]] = [
    # --- spec --------------------------------------------------------------------------------
    ("XP1001", "error", "spec file not found: {path}", "Write a spec TOML beside the kernel (same stem) or pass --spec; `xpiler spec --infer SRC` proposes one."),
    ("XP1002", "error", "spec is not valid TOML: {detail}", "Fix the TOML syntax at the given line."),
    ("XP1003", "error", "missing required key '{key}'", "Every spec needs entry, dialect and [[args]]; see docs/spec.md."),
    ("XP1004", "error", "unknown dialect '{value}'", "Use one of: cuda, hip, bang, c."),
    ("XP1005", "error", "unknown dtype '{value}' for argument '{arg}'", "Use one of: float32 float16 bfloat16 int8 uint8 int16 int32 int64."),
    ("XP1006", "error", "unknown role '{value}' for argument '{arg}'", "Use one of: in, out, inout, scalar."),
    ("XP1007", "error", "shape of argument '{arg}' has a non-positive extent ({value})", "Every extent must evaluate to an integer >= 1 in every instance."),
    ("XP1008", "error", "array argument '{arg}' has no shape", "Give `shape = [...]` for every in/out/inout argument."),
    ("XP1009", "error", "scalar argument '{arg}' has no value", "Give `value = ...` (a number or a size expression) for every scalar."),
    ("XP1010", "error", "dialect '{dialect}' needs a [launch] table with {keys}", "cuda/hip need grid and block; bang needs dim and func_type."),
    ("XP1011", "error", "launch key '{key}' must have 3 entries, got {value}", "Write launch dimensions as [x, y, z]."),
    ("XP1012", "error", "launch dimension {key} evaluates to {value}", "Launch dimensions must be integers >= 1."),
    ("XP1013", "error", "bad size expression '{expr}': {detail}", "Expressions may use integers, size names, + - * / % ( ), cdiv, min, max."),
    ("XP1014", "error", "unknown size name '{name}' in '{expr}'", "Define it in [sizes] (or in the instance in [[shapes]])."),
    ("XP1015", "error", "duplicate argument name '{arg}'", "Argument names must be unique."),
    ("XP1016", "error", "spec argument list does not match the kernel signature of '{entry}': {detail}", "List every kernel parameter in [[args]], in signature order, with matching types."),
    ("XP1017", "error", "entry function '{entry}' not found in {path}", "Set `entry` to the kernel's function name."),
    ("XP1018", "error", "unknown func_type '{value}'", "Use block, union1, union2 or union4."),
    ("XP1019", "error", "bad reference '{value}': {detail}", "Write [reference] python = \"file.py:function\" relative to the spec's folder."),
    ("XP1020", "error", "bad tolerance {key} = {value}", "Tolerances are non-negative numbers."),
    ("XP1021", "error", "[[shapes]] entry {index} has no name", "Give every extra instance a unique `name`."),
    ("XP1022", "error", "argument '{arg}': bad constraint {key} = {value}", "range = [lo, hi] with lo <= hi; permutation_axis within the shape; value matching the shape; in_reference true or false."),
    ("XP1023", "error", "spec dialect '{spec}' does not match the source file's dialect '{src}'", "Fix `dialect` or pass the right file."),
    ("XP1024", "warning", "unknown key '{key}' ignored", "Check the spelling; see docs/spec.md."),
    ("XP1025", "error", "size '{name}' must be an integer, got {value}", "Sizes are integers."),
    ("XP1026", "error", "argument '{arg}' is an array of {count} elements; the limit is {limit}", "Use smaller shapes for verification instances."),
    ("XP1027", "error", "scalar '{arg}' has dtype {dtype} but value {value}", "Integer scalars need integer values."),
    ("XP1028", "error", "argument entry {index} has no name", "Every [[args]] entry needs `name`."),
    ("XP1029", "error", "duplicate instance name '{name}'", "Names in [[shapes]] must be unique and not 'base'."),
    ("XP1030", "note", "could not infer {what}", "Fill it in by hand; the proposed spec marks it with a TODO comment."),
    ("XP1031", "error", "launch {key} = {value} in {instances} is beyond the {dialect} limit ({limit})", "cuda/hip: grid x <= 2^31-1, grid y and z <= 65535, block x and y <= 1024, z <= 64, at most 1024 threads per block, shared memory <= 227 KiB (cuda) or 64 KiB (hip); bang: taskDim = x*y*z <= 65536, a multiple of 4n for UNIONn. A grid-stride loop covers any size with a bounded grid."),
    ("XP1032", "error", "instance '{instance}' needs {size} for its arrays; the limit is {limit}", "Verification instances must fit in memory several times over (inputs, outputs, the reference's and the child run's copies): use smaller [sizes] or [[shapes]]."),
    # --- command line / files ----------------------------------------------------------------
    ("XP1201", "error", "file not found: {path}", "Check the path."),
    ("XP1202", "error", "cannot tell the dialect of {path}", "Use .cu (cuda), .hip (hip), .mlu (bang) or .c/.cc/.cpp (c), or pass a spec with `dialect`."),
    ("XP1203", "error", "'{command}' is not available yet: {why}", "See the README's status table."),
    ("XP1204", "error", "output directory {path} already holds {name}, and {why}", "Nothing was written. Choose another -o, move the file away, or give --force to let xpiler replace it (see docs/provenance.md, output folders)."),
    ("XP1205", "error", "bad option: {detail}", "See `xpiler COMMAND --help`."),
    ("XP1206", "error", "bad argument to a loaded kernel: {detail}", "Pass the spec's arrays in its order, all numpy/host arrays or all contiguous arrays on one CUDA device, with the sizes of one of the spec's instances (add an instance to [[shapes]] for new sizes)."),
    ("XP1207", "error", "output directory {path} is an existing file, not a folder", "Nothing was written. Give -o a folder (it is created when missing)."),
    ("XP1208", "error", "output directory {path} would overwrite {what} ({name}) with an output of the run", "Nothing was written. Choose an -o apart from the source, spec and reference; --force never replaces an input."),
    ("XP1209", "error", "cannot write into output directory {path}: {detail}", "Check that the folder can be created and written to, or choose another -o."),
    ("XP1220", "error", "the source kernel {src} fails its own test, before anything was migrated ({test}): {detail}", "Nothing was migrated: the source is the oracle every candidate is compared with. Fix the source or its spec; `xpiler test SRC --instance NAME` reproduces the failing test."),
    ("XP1221", "error", "the source kernel {src} did not finish within {seconds} s ({test}), before anything was migrated", "It hangs, or is far too slow for that instance: fix it, use smaller [[shapes]], or give a larger --timeout. Nothing was migrated."),
    ("XP1222", "error", "the spec's reference {ref} raised {detail}", "Fix the Python reference at the line given (the kernel is not at fault); `xpiler test` reproduces it."),
    ("XP1223", "error", "bad value for {flag}: {value} ({want})", "See `xpiler COMMAND --help`."),
    ("XP1224", "error", "unknown instance '{name}'; the spec's instances are: {names}", "Give --instance one of the listed names ('base' or a [[shapes]] name)."),
    # --- export-pairs (xpiler/pairs.py) -----------------------------------------------------------
    ("XP1250", "error", "no provenance log found in {paths}", "Give provenance.jsonl files, or folders that hold them (searched recursively), e.g. the -o folders of `xpiler migrate` runs."),
    ("XP1251", "error", "cannot tell the output format of {path}", "Name the output pairs.jsonl (JSON lines) or pairs.parquet (needs pyarrow)."),
    ("XP1252", "error", "{path}: writing Parquet needs pyarrow, which is not importable here ({why})", "Install it (pip install pyarrow), or write JSON lines (-o pairs.jsonl): the same records, one JSON object a line."),
    ("XP1253", "error", "cannot write the pairs to {path}: {detail}", "Check that the folder exists or can be created and written to, or choose another -o."),
    # --- whole directories (xpiler migrate DIR; xpiler/project/) -------------------------------------
    ("XP1240", "error", "{path} holds no kernel files to migrate (looked for {exts} below it)", "Give a folder with kernel sources (their specs beside them), or one kernel file; hidden folders and xpiler output folders are not searched."),
    ("XP1241", "error", "{flag} does not apply when migrating a directory: {why}", "Drop the option; a directory run takes each kernel's spec from beside it (or infers it) and resumes by itself from OUT/project-state.jsonl."),
    ("XP1242", "error", "no usable spec for {name}: {why}", "Write one beside the kernel: `xpiler spec --infer SRC > SRC.toml` proposes one; fill in its TODOs and re-run the same command (kernels already finished are not migrated again)."),
    ("XP1243", "warning", "line {line} of the project state {path} is not a record ({why}); it is ignored", "The kernels it recorded are migrated again; nothing else is lost. The file is written only by xpiler: do not edit it."),
    ("XP1244", "error", "the folder to migrate, {src}, is the output folder {path} or inside it", "Give -o a folder outside the kernels' tree, or a new folder inside it (it is skipped when the tree is searched)."),
    # --- toolchains ----------------------------------------------------------------------------
    ("XP2001", "error", "CUDA/HIP compile failed: {detail}", "The compiler's message is attached; fix the source at the given line."),
    ("XP2002", "error", "BANG compile failed: {detail}", "The compiler's message is attached; fix the source at the given line."),
    ("XP2003", "error", "C compile failed: {detail}", "The compiler's message is attached; fix the source at the given line."),
    ("XP2004", "error", "no usable toolchain for {what}: {why}", "Run `xpiler doctor` to see what is missing and how to install it."),
    ("XP2005", "error", "AMDGPU compile failed for {arch}: {detail}", "The clang message is attached."),
    ("XP2006", "note", "added #include <{header}>: the source uses {use} without including it", "The build put the dialect's standard header before the source (line numbers unchanged); add the #include to the source to make it self-contained."),
    ("XP2007", "note", "built as C++ with g++ ({why}); the dialect stays c", "Nothing to do: C++ sources of the c dialect are compiled with g++ and called through their C or C++ linkage."),
    # --- verification --------------------------------------------------------------------------
    ("XP2101", "error", "output '{arg}' differs from the expected result: {detail}", "See the first differing elements; the minimized failing case is saved beside the output."),
    ("XP2102", "error", "output '{arg}' has NaN where the expected value is finite (unwritten element or NaN produced): {detail}", "Every output element must be written; outputs are poisoned before each run."),
    ("XP2103", "error", "kernel run timed out after {seconds} s", "The kernel hangs or is far too slow for the instance."),
    ("XP2104", "error", "kernel run crashed ({detail})", "A segmentation fault or abort in the kernel; run `xpiler test` with the same seed to reproduce."),
    ("XP2105", "error", "out-of-bounds access found by AddressSanitizer: {detail}", "The kernel reads or writes outside a buffer; a GPU may hide this, the test does not."),
    ("XP2106", "error", "kernel run exceeded the memory limit of {limit_mb} MiB", "The kernel allocates far too much memory."),
    ("XP2107", "error", "input argument '{arg}' was modified by the kernel", "Declare it inout in the spec if the kernel writes it."),
    ("XP2108", "error", "reference function failed: {detail}", "Fix the Python reference named in [reference]."),
    ("XP2109", "error", "emulator runtime error: {detail}", "See the XP30xx code in the message."),
    ("XP2110", "error", "reference returned {got} arrays; the spec has {want} out/inout arguments", "Return the out/inout arrays in signature order."),
    ("XP2111", "error", "harness failed: {detail}", "Internal harness problem; please report it with the job folder."),
    ("XP2112", "error", "GPU launch failed: {detail}", "The launch configuration or shared-memory size of this instance is not valid on this GPU; check the spec's [launch] section, or run `xpiler test` on the kernel."),
    ("XP2113", "error", "null pointer dereference found by AddressSanitizer: {detail}", "The kernel read or wrote through a null pointer (the address is in the zero page): a pointer that was never set, or a missing argument. The first frame of the report (attached) gives the line."),
    ("XP2114", "error", "access through an invalid pointer found by AddressSanitizer: {detail}", "The kernel used an address that is not mapped at all (an uninitialised or garbage pointer, or an index far outside every buffer); see the attached report for the line."),
    ("XP2115", "error", "use of memory outside its lifetime found by AddressSanitizer: {detail}", "Use after free, after return or after scope, or a double or invalid free; see the attached report for where the memory was freed."),
    ("XP2116", "error", "memory error found by AddressSanitizer: {detail}", "AddressSanitizer stopped the run for a reason other than an out-of-bounds, null or freed-memory access (e.g. a stack overflow or an arithmetic fault); the report is attached."),
    # --- passes and migration ---------------------------------------------------------------------
    ("XP4001", "error", "{pass_name} refused: {why}", "The rewrite would change the program's meaning here; the search tries other parameters or passes."),
    ("XP4002", "error", "{pass_name} does not apply: {why}", "Nothing in the program matches what this pass rewrites."),
    ("XP4060", "error", "{pass_name} refused: {why}", "A sequential kernel runs the grid as loops and needs every launch size as a value: give the kernel a scalar parameter that carries the size (an [[args]] scalar with value = \"<size>\"), or migrate to a dialect that keeps the launch (cuda <-> hip)."),
    ("XP4061", "note", "the migrated kernel takes {n} extra parameter(s) that carry launch sizes: {params}; callers pass them last", "The source kernel had these sizes only from its launch (grid/block/dim or a macro); the target runs the launch as loops and needs them as values. The output's spec lists them as scalar arguments with in_reference = false (the Python reference does not take them); the migrated host launcher, when there is one, passes them."),
    ("XP4062", "note", "the source kernel fails at run time on the derived instance {name} ({sizes}): {why}; that size is left out of every test of this migration", "The tester adds boundary instances of its own (docs/verification.md). This one is outside the source kernel's domain: the source itself fails there (e.g. it overruns a declared on-chip array), so it defines no result to migrate. The spec's own instances are all tested; if this size matters, fix the source or bound it in the spec's [test] constraints."),
    ("XP4003", "error", "the program after {pass_name} failed verification: {why}", "The step is dropped; the last verified program is kept (see the report)."),
    ("XP4310", "note", "the steps {steps} of this plan were applied without tests of their own, and the program tested after {pass_name} failed: {why}", "A probed plan may test only the program its steps lead to (docs/passes.md, \"Deferred tests\"). When that program fails, none of those steps is adopted: the plan reaches no kernel through them and the next plan starts again from the source."),
    ("XP4004", "error", "no verified {target} kernel was found for {entry}", "The best candidate is written with .unverified in its name, beside a minimized failing test."),
    ("XP4005", "error", "no pass pipeline from {src} to {dst} for this kernel: {why}", "See docs/passes.md for what each direction supports."),
    ("XP4006", "error", "replay diverged at event {seq} ({what}): expected hash {want}, got {got}", "The source, the tool version or the log changed since the log was written."),
    ("XP4007", "error", "not a provenance log: {path} ({why})", "Give the provenance.jsonl that `xpiler migrate` wrote."),
    ("XP4008", "error", "the provenance log {path} is incomplete: {why}", "Replay needs the whole log of a finished migration, ending with its `end` event. A log cut short (an interrupted run) can be finished with `xpiler migrate --resume LOG`; replay the log that run writes."),
    ("XP4009", "error", "replay could not re-apply event {seq} ({what}): {why}", "The logged step does not run as logged: its pass name, parameters or program text were edited, or the tool changed since the log was written."),
    ("XP4010", "error", "the log header's {key} does not match what replay re-derives: {detail}", "The header was edited after the migration, or the spec file changed since. Re-run the migration to get a log of what is done now."),
    ("XP4011", "error", "{path} was changed after the migration: its sha256 is {got}, the log recorded {want}", "The file on disk is not the output the log vouches for: restore it or re-run the migration (--output FILE compares another copy)."),
    ("XP4012", "warning", "the {role} file named by the log is gone ({path}): it was not compared with the re-derived output", "Give --output FILE to compare a copy kept elsewhere."),
    ("XP4013", "error", "the log was edited after it was written: its lines hash to {got}, the end event recorded {want}", "Restore the log as written, or re-run the migration."),
    ("XP4014", "error", "the log's end event disagrees with its {what}: {detail}", "The end event or the events before it were edited; re-run the migration."),
    ("XP4020", "error", "time budget spent: {what}", "Give a larger --budget; the report lists what was cut, and no cut test counts as passed."),
    ("XP4021", "warning", "the LLM step for {pass_name} was dropped: {why}", "The symbolic rewrite stands in where it applies. Check the endpoint (timeouts, HTTP errors) or give a larger --budget."),
    ("XP4050", "warning", "the run-time sized local array '{name}[{extent}]' is given {size} elements, the largest size of the spec's instances, with a guard that stops the kernel (device trap) above it", "cuda/hip refuse arrays sized at run time. Add a spec instance with the largest size you will run, or stage the array through memory the host allocates."),
    ("XP4101", "warning", "host API '{name}' has no {dst} counterpart", "See docs/api-mapping.md; the call is left as a comment for you to port."),
    ("XP4102", "error", "the host launcher {func} (c) cannot be migrated to {dst}: {why}", "The kernel is written without the launcher. In c host code, every buffer the kernel is given must be allocated by the launcher (malloc, calloc, aligned_alloc, posix_memalign, _mm_malloc) and touched on the host only by memcpy, memset, free and null checks: on a GPU or MLU the kernel cannot read host memory, and the host cannot read device memory. Copy through such a buffer, or migrate the kernel alone and write the launcher by hand."),
    ("XP4120", "error", "the migration of {name} ended without a result: {why}", "The child process running it crashed or was killed; the other kernels went on. Re-run the same command to try it again, or migrate that file alone with XPILER_DEBUG=1 and report it."),
    ("XP4121", "error", "the migration of {name} was stopped after {limit} s (its --budget plus a margin)", "Give a larger --budget, or migrate that file alone to see where the time goes."),
    ("XP4122", "note", "{name} was running when the previous run was killed: resumed from its log {log}", "The steps its log recorded are re-derived, and the programs it verified are not tested again (--resume)."),
    ("XP4123", "note", "{name} was running when the previous run was killed: restarted from the beginning ({why})", "Its log could not be resumed from; the migration ran again in full."),
    ("XP4124", "note", "{name} had finished when the previous run was killed: its result was taken from its closed log {log}", "Nothing was run again for it."),
    ("XP4130", "note", "no {label} assembly was written: {why}", "The kernel's verdict does not depend on it. Install the tool named (see `xpiler doctor`), or run where it exists (SASS needs cuobjdump or nvdisasm, as on the GPU machine)."),
    ("XP4131", "error", "this log was not exported: {why}", "Only closed logs of verified migrations whose output, assembly and source files still have their recorded SHA-256 give pairs; `xpiler replay LOG` says more. The other logs were exported."),
    ("XP4132", "warning", "{what} left out of this log's pair ({why})", "The file the run wrote is gone; the pair is exported without it. Re-run the migration with --emit-asm to have it again."),
    ("XP4210", "error", "{pass_name}: bad register-tiled gemm parameter: {why}", "tensorize(target=\"c\", micro=\"MRxNR\", kc=, mc=, nc=): MR 1..16, NR 16/32/48/64, MR*NR/16 + NR/16 + 1 <= 32 zmm registers, kc 1..4096, mc a multiple of MR with mc*kc <= 65536, nc a multiple of NR (docs/passes/tensorize.md)."),
    ("XP4230", "error", "{op}: {role} at byte {offset} of {qualifier} array '{name}' ({size} bytes, declared at {file}:{line}) with {bytes} bytes runs {over} bytes past the array's end", "BANG emulator: the copy stays inside the on-chip memory but leaves the declared array it starts in, so it writes (or reads) whatever lies after it. Fix the copy size or the row count that scales it (e.g. rows per block = capacity / row length, not %), or declare the array large enough."),
    ("XP4280", "error", "out-of-bounds write found by the harness's guard zones: {detail}", "A write landed in the guard zone the harness keeps before or after an array argument, and AddressSanitizer did not report it (gcc does not instrument AVX-512 masked stores and other vector builtins). The kernel writes outside the array: fix the guard, mask or row count of that store (docs/verification.md, \"Guard zones\")."),
    ("XP4281", "error", "{pass_name} refused: {why}", "Row un-staging (passes/unstage_rows.py) could not prove one of its obligations for this row loop (the split of a lane loop at the copy-in count, a store covering all main or all tail lanes, a value that stays valid, a statement it reads); the plan without it follows (docs/passes/unstage_rows.md)."),
    ("XP4282", "error", "{pass_name} refused: {why}", "Row un-staging: the row reads buffer lanes it did not write in this row (a padded tail that is not refilled keeps an earlier row's values): the rewrite would change what is read; the plan without it follows (docs/passes/unstage_rows.md)."),
    ("XP4283", "error", "{pass_name} refused: {why}", "Row un-staging: the padded tail of a staged row is stored to global memory, i.e. past the row's own elements; the rewrite drops no such store and refuses (docs/passes/unstage_rows.md)."),
    ("XP4287", "error", "{pass_name} refused: {why}", "Row un-staging: blocks of rows dealt to the tasks in turn (r0 = taskId * B; r0 += taskDim * B) are written one row at a time only when Z3 proves that they cover every row once and the rows are independent of each other and of the task; the plan without it follows (docs/passes/unstage_rows.md)."),
    ("XP4288", "error", "{pass_name} refused: {why}", "Row un-staging: a sum-pool over a block of rows is read back as row sums only when it is one 1 x Q window per row, reads row * Q * A + q * A + c, and its partial sums are read only as one row's A partials after it; the plan without it follows (docs/passes/unstage_rows.md)."),
    ("XP4290", "error", "bad precondition '{key}': {detail}", "[preconditions] maps an integer scalar argument of the spec to a comparison with an integer, or a list of them: stride = \">= 1\" or stride = [\">= 1\", \"<= 8\"] (docs/spec.md, \"Preconditions\")."),
    ("XP4291", "error", "instance '{instance}' breaks a precondition: {detail}", "Every instance of the spec must satisfy [preconditions]: the passes' proofs assume them, so an instance outside them would test a kernel outside its contract. Change the instance's sizes or the precondition (docs/spec.md, \"Preconditions\")."),
    ("XP4296", "error", "{pass_name} refused: {why}", "tensorize(target=\"c\", stream=N): non-temporal stores (_mm512_stream_ps after an alignment peel) are written only for a vectorized loop with one store T[i] = E to a pointer parameter that the loop does not read, no reduction, inner loop or branch, and no trip count bounded by a constant below N; stream=0 keeps normal stores (docs/passes/tensorize.md, \"Non-temporal stores\")."),
    ("XP4292", "error", "{pass_name}: bad block-tiled WMMA parameter: {why}", "tensorize(target=\"cuda\", tile=BM, tile_n=BN, warps=W, bk=BK, double=): BM, BN, BK multiples of 16; W 1, 2, 4, 8 or 16 warps that split the tile into warp tiles of whole 16x16 fragments, at most 8 accumulators per warp; the slices split evenly into 8-half chunks over the threads; static shared memory under 48 KiB (docs/passes/tensorize.md, \"Block-tiled WMMA\")."),
    ("XP4293", "error", "{pass_name}: the block-tiled WMMA form does not apply: {why}", "The form computes half x half -> float matrix products on cuda (a kernel the one-warp WMMA form takes); float32, integer or per-row contractions, other dialects and kernels that are no matmul are refused. In the default cuda plans it is an alternative: the one-warp WMMA form follows (docs/passes/tensorize.md, \"Block-tiled WMMA\")."),
    # --- internal ------------------------------------------------------------------------------
    ("XP9001", "error", "internal error: {detail}", "Please report this with the command line and the files."),
    ("XP9002", "warning", "internal error in the {pass_name} pass, so that step was not taken: {detail}", "The migration went on without this step (other candidates and plans were tried) and its result is tested as always; the failure is in the provenance log (a note with the traceback). Please report this with the command line and the files."),
]


def _load_component_rows() -> list[tuple[str, str, str, str]]:
    rows = []
    base = Path(__file__).parent
    for path in sorted(base.glob("**/DIAGNOSTICS.txt")):
        for line in path.read_text().splitlines():
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            parts = line.split("|")
            if len(parts) >= 4 and parts[0].startswith("XP"):
                rows.append((parts[0].strip(), parts[1].strip(), parts[2].strip(), "|".join(parts[3:]).strip()))
    return rows


TABLE: dict[str, DiagInfo] = {}
for _row in _ROWS + _load_component_rows():
    TABLE.setdefault(_row[0], DiagInfo(*_row))


class XPError(Exception):
    """A diagnostic raised as an error: stable code, message, source location, hint.

    ``XPError("XP1005", value="float33", arg="A", file="add.toml", line=7)`` formats the
    table's template; a free-text ``message`` may be given instead of template fields.
    """

    def __init__(self, code: str, message: str | None = None, file: str | Path | None = None,
                 line: int | None = None, col: int | None = None, hint: str | None = None,
                 **fields):
        info = TABLE.get(code)
        if message is None:
            if info is None:
                message = code
            else:
                try:
                    message = info.message.format(**fields)
                except (KeyError, IndexError):
                    message = info.message
        self.code = code
        self.message = message
        self.file = str(file) if file is not None else None
        self.line = line
        self.col = col
        self.hint = hint if hint is not None else (info.hint if info else "")
        self.severity = info.severity if info else "error"
        self.fields = fields
        super().__init__(self.format())

    def location(self) -> str:
        if not self.file:
            return ""
        loc = self.file
        if self.line:
            loc += f":{self.line}"
            if self.col:
                loc += f":{self.col}"
        return loc

    def format(self) -> str:
        loc = self.location()
        head = f"{loc}: " if loc else ""
        text = f"{head}{self.severity} {self.code}: {self.message}"
        if self.hint:
            text += f"\n  hint: {self.hint}"
        return text

    def to_json(self) -> dict:
        return {"code": self.code, "severity": self.severity, "message": self.message,
                "file": self.file, "line": self.line, "col": self.col, "hint": self.hint}


class XPErrors(XPError):
    """Several diagnostics found in one input (e.g. a spec with many wrong keys)."""

    def __init__(self, errors: list[XPError]):
        self.errors = errors
        first = errors[0]
        super().__init__(first.code, first.message, first.file, first.line, first.col, first.hint)

    def format(self) -> str:  # type: ignore[override]
        return "\n".join(e.format() for e in getattr(self, "errors", [])) or super().format()


def render_markdown() -> str:
    lines = [
        "# Diagnostics",
        "",
        "Generated from `xpiler/diagnostics.py` (and the `DIAGNOSTICS.txt` tables of the front end",
        "and the emulators) by `python -m xpiler.diagnostics > docs/diagnostics.md`. Do not edit by hand.",
        "",
        "| ID | severity | message | what to do |",
        "|---|---|---|---|",
    ]
    for code in sorted(TABLE):
        d = TABLE[code]
        msg = d.message.replace("|", "\\|")
        hint = d.hint.replace("|", "\\|")
        lines.append(f"| {d.code} | {d.severity} | {msg} | {hint} |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":  # pragma: no cover
    sys.stdout.write(render_markdown())
