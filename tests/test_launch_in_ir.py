"""The launch configuration is part of the IR (issue 13): a program holds the launch of each
launched kernel (``Program.launches``), serializes it, and is another program when only its
launch differs; passes that size a launch change the program's, and logs written while the
launch was a dict beside the program still replay."""
import hashlib
import json
import shutil
from pathlib import Path

import pytest

from xpiler.frontend import parse_file
from xpiler.ir import nodes as N
from xpiler.ir.identity import program_key, text_hash
from xpiler.ir.serialize import from_json, to_json
from xpiler.migration.stage import Stage
from xpiler.printers import print_program
from xpiler.schedule.step import Step, StepContext, apply_program, apply_step

ROOT = Path(__file__).resolve().parents[1]
EX = ROOT / "examples"
FIXTURES = Path(__file__).resolve().parent / "fixtures" / "launch_logs"

GRID = {"grid": ["max((n + 255) / 256, 1)", 1, 1], "block": [256, 1, 1], "shared_bytes": "4*S"}


def _relu_hip():
    return parse_file(EX / "relu" / "relu.hip", "hip")


def test_launch_config_keeps_keys_order_and_spelling():
    lc = N.LaunchConfig.from_dict("k", {"block": [128, 1, 1], "grid": ["cdiv(n,128)", 1, 1], "note": "x"})
    assert lc.grid == ("cdiv(n,128)", 1, 1) and lc.block == (128, 1, 1) and lc.dim is None
    assert list(lc.as_dict()) == ["block", "grid", "note"]        # the spec writer keeps this order
    assert lc.as_dict()["grid"] == ["cdiv(n,128)", 1, 1]          # lists, as the spec and the log have them
    bang = N.LaunchConfig.from_dict("k", {"dim": [4, 1, 1], "func_type": "union1"})
    assert bang.dim == (4, 1, 1) and bang.func_type == "union1" and bang.grid is None
    hash(lc)                                                      # frozen: hashable with its values


def test_round_trip_serialization_with_launches():
    prog = _relu_hip().with_launch("relu", GRID)
    back = from_json(json.loads(json.dumps(to_json(prog))))
    assert back == prog and hash(back) == hash(prog)
    assert back.launch_dict("relu") == GRID
    assert isinstance(back.launch_of("relu"), N.LaunchConfig)
    # a program without launches dumps as it did before the launch was in the IR
    assert "launches" not in to_json(_relu_hip())
    assert from_json(to_json(_relu_hip())).launches == ()


def test_programs_that_differ_only_in_launch_are_different_programs():
    base = _relu_hip()
    a = base.with_launch("relu", {"grid": ["32", 1, 1], "block": [256, 1, 1]})
    b = base.with_launch("relu", {"grid": ["(n + 255) / 256", 1, 1], "block": [256, 1, 1]})
    text = print_program(a, "hip")
    assert text == print_program(b, "hip")                    # one kernel text ...
    assert a != b and hash(a) != hash(b)                      # ... two programs
    assert program_key(a, text) != program_key(b, text)
    assert program_key(base, text) == text_hash(text)         # no launch: keyed by the text alone
    sa, sb = Stage(a, "hip", "relu", text=text), Stage(b, "hip", "relu", text=text)
    assert sa.hash == sb.hash and sa.key != sb.key
    assert sa.key == program_key(a, text)


def test_program_key_is_the_key_logs_already_hold():
    """The identity with a launch is the one Stage.key computed from the dict beside the program,
    so the search keys of logs written before (search_root, untuned, tuned) are unchanged."""
    prog = _relu_hip().with_launch("relu", GRID)
    text = print_program(prog, "hip")
    canon = json.dumps(GRID, sort_keys=True, default=str)
    old = hashlib.sha256((text + "\n/* launch " + canon + " */").encode()).hexdigest()[:16]
    assert program_key(prog, text) == old


def test_with_launch_replaces_in_place_and_empty_removes():
    p = _relu_hip().with_launch("relu", GRID).with_launch("other", {"grid": [1, 1, 1], "block": [32, 1, 1]})
    q = p.with_launch("relu", {"grid": [2, 1, 1], "block": [64, 1, 1]})
    assert [lc.kernel for lc in q.launches] == ["relu", "other"] and q.launch_of("relu").grid == (2, 1, 1)
    r = q.with_launch("relu", {})
    assert r.launch_of("relu") is None and r.launch_dict("relu") == {} and r.launch_of("other") is not None
    assert p.with_launch("relu", dict(GRID)) is p             # no change: the same program


def test_stage_launch_is_a_read_only_view_of_the_program():
    prog = _relu_hip().with_launch("relu", GRID)
    st = Stage(prog, "hip", "relu")
    assert st.launch == GRID
    with pytest.raises(AttributeError):
        st.launch = {}
    with pytest.raises(TypeError):                            # the old signature: a dict as 4th field
        Stage(prog, "hip", "relu", dict(GRID))


def test_binding_regrid_step_changes_the_programs_launch():
    """A regrid retarget sizes the launch from the problem: the step's result is one program
    (no launch dict beside it) whose launch is the new one; the kernel text is the one of the
    plain retarget, so only the program's launch tells the two apart."""
    prog = _relu_hip().with_launch("relu", {"grid": ["RELU_MAX_GRID", 1, 1], "block": [256, 1, 1]})
    ctx = StepContext({}, [])
    params = {"target": "cuda", "mode": "retarget", "regrid": True, "block": 512, "grid_cap": None}
    out = apply_program(prog, "relu", "binding", params, ctx)
    assert isinstance(out, N.Program) and out.dialect == "cuda"
    lc = out.launch_of("relu")
    assert lc is not None and lc.block == (512, 1, 1)
    assert lc.grid[0] == "max((n + 511) / 512, 1)" and lc.grid[1:] == (1, 1)
    plain = apply_program(prog, "relu", "binding", {"target": "cuda", "mode": "retarget"}, ctx)
    assert plain.launch_dict("relu") == prog.launch_dict("relu")     # a plain retarget keeps the launch
    assert print_program(plain, "cuda") == print_program(out, "cuda") and plain != out
    st = Stage(prog, "hip", "relu", text=print_program(prog, "hip"))
    nxt = apply_step(Step("binding", params), st, ctx)
    assert nxt.program == out and nxt.launch == lc.as_dict()
    assert nxt.key != apply_step(Step("binding", {"target": "cuda", "mode": "retarget"}), st, ctx).key


def test_loop_recovery_drops_the_launch():
    """Loop recovery returns a c program: the kernel's launch goes with the kernel (as the dict
    beside the program did)."""
    launch = {"grid": ["max(min((n + 255) / 256, 32), 1)", 1, 1], "block": [256, 1, 1]}
    prog = _relu_hip().with_launch("relu", launch)
    out = apply_program(prog, "relu", "loop_recovery", {}, StepContext(launch, []))
    assert out.dialect == "c" and out.launches == ()


CASES = ["relu_hip_cuda_regrid", "add_c_cuda", "relu_mlu_cuda", "relu_cu_bang", "relu_hip_cuda_tuned"]


@pytest.mark.parametrize("case", CASES)
def test_logs_written_before_the_move_still_replay(case, tmp_path, monkeypatch):
    """Logs written by the tree before this change (the launch a dict beside the program),
    with their sources copied beside them (the header's relative paths): replay re-derives every
    step, the output and its host launcher, and the files' hashes."""
    from xpiler.replay import replay
    root = tmp_path / "root"
    shutil.copytree(FIXTURES, root)
    monkeypatch.chdir(root)
    rep = replay(root / case / "provenance.jsonl")
    assert rep.ok and rep.verified and rep.steps >= 1
    assert not rep.warnings, [str(w) for w in rep.warnings]
    assert rep.output_file is not None and rep.output_file.parent == root / case
