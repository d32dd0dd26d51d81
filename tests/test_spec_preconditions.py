"""``[preconditions]`` in a kernel spec (docs/spec.md, "Preconditions"): what every call of the
kernel satisfies, checked on every instance (XP4291), malformed entries refused (XP4290), written
back into a migrated spec, and handed to loop recovery's proofs as facts over the kernel's
parameter names."""
from __future__ import annotations

import pytest

from xpiler.diagnostics import XPError, XPErrors
from xpiler.spec import parse_spec, spec_to_toml

BASE = """
entry = "k"
dialect = "c"
[sizes]
S = 1
H = 5
KH = 3
[[args]]
name = "x"
dtype = "float32"
shape = ["H"]
role = "in"
[[args]]
name = "stride"
dtype = "int32"
role = "scalar"
value = "S"
[[args]]
name = "H"
dtype = "int32"
role = "scalar"
value = "H"
[[args]]
name = "KH"
dtype = "int32"
role = "scalar"
value = "KH"
[[args]]
name = "alpha"
dtype = "float32"
role = "scalar"
value = 1
"""


def codes(text):
    with pytest.raises((XPError, XPErrors)) as e:
        parse_spec(text)
    errs = e.value.errors if isinstance(e.value, XPErrors) else [e.value]
    return [x.code for x in errs], " ".join(str(x) for x in errs)


def test_preconditions_are_parsed_and_written_back():
    sp = parse_spec(BASE + '[preconditions]\nstride = ">= 1"\nH = [">= KH", "< 100"]\n')
    assert sp.preconditions == {"stride": ((">=", 1),), "H": ((">=", "KH"), ("<", 100))}
    again = parse_spec(spec_to_toml(sp))
    assert again.preconditions == sp.preconditions
    # a migrated spec keeps them
    assert sp.with_dialect("bang").preconditions == sp.preconditions


@pytest.mark.parametrize("entry,why", [
    ('nope = ">= 1"', "not a scalar argument"),
    ('x = ">= 1"', "not a scalar argument"),          # an array
    ('alpha = ">= 1"', "integer scalar is required"),
    ('stride = "positive"', "is not 'OP INTEGER'"),
    ('stride = ">= KW"', "'KW' in"),                   # no such scalar
    ('stride = 1', "is not 'OP INTEGER'"),
])
def test_a_bad_precondition_is_XP4290(entry, why):
    cs, text = codes(BASE + "[preconditions]\n" + entry + "\n")
    assert cs == ["XP4290"], text
    assert why in text


def test_an_instance_outside_the_preconditions_is_XP4291():
    text = BASE + '[[shapes]]\nname = "small"\nH = 2\n[preconditions]\nH = ">= KH"\n'
    cs, msg = codes(text)
    assert cs == ["XP4291"], msg
    assert "'small'" in msg and "H = 2, not >= KH = 3" in msg


def test_derived_instances_keep_to_the_preconditions():
    sp = parse_spec(BASE + '[preconditions]\nH = ">= KH"\n')
    assert sp.constraints_hold({"S": 1, "H": 3, "KH": 3})
    assert not sp.constraints_hold({"S": 1, "H": 2, "KH": 3})
    assert sp.precondition_failures({"S": 1, "H": 2, "KH": 3}) == ["H = 2, not >= KH = 3"]


def test_the_migration_hands_them_to_loop_recovery_by_parameter_name():
    from xpiler.migration.driver import _preconditions_to_params
    from xpiler.schedule.step import StepContext
    sp = parse_spec(BASE + '[preconditions]\nstride = ">= 1"\nH = ">= KH"\n')
    # the kernel names its parameters differently from the spec: the place in the signature counts
    assume = _preconditions_to_params(sp, ["xs", "s", "h", "kh", "a"])
    assert assume == (("s", ">=", 1), ("h", ">=", "kh"))
    ctx = StepContext({}, [], assume)
    assert ctx.call_params("loop_recovery", {})["assume"] == assume
    assert "assume" not in ctx.call_params("binding", {})
    assert "assume" not in StepContext({}, []).call_params("loop_recovery", {})
