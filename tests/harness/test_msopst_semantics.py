"""Case-file fields mean what msOpST makes of them (docs/harness.md, "Case files"), checked without the
msopgen checkout: defaults, value_range per distribution, explicit and .bin values, the expected-data
function's call, error_threshold's rule, and the loud errors where msOpST would read a field otherwise.
tests/harness/test_msopst_cases.py compares the same against msOpST's own code when it is there."""

from __future__ import annotations

import json

import numpy as np
import pytest

from ascendc_ops.harness.values import from_distribution, make_values
from ascendc_ops.harness.verify import cases as C, suite as V
from ascendc_ops.harness.verify.error_threshold import check_error_threshold, round_to


def case(name="c", **over):
    """A small swiglu case (one input, one output)."""
    raw = {
        "case_name": name,
        "op": "swiglu",
        "input_desc": [{"name": "x", "format": "ND", "type": "float16", "shape": [3, 8]}],
        "output_desc": [{"name": "y", "format": "ND", "type": "float16", "shape": [3, 4]}],
    }
    raw.update(over)
    return raw


def load(tmp_path, *raws):
    p = tmp_path / "cases.json"
    p.write_text(json.dumps(list(raws)))
    return C.load_file(p, V.OPS)


def test_defaults_and_names(tmp_path):
    """No value_range: uniform in [0.1, 1.0]; names as msOpST gives them, case_001 / sub_case_001."""
    (one,) = load(tmp_path, case())
    assert one.inputs[0].value_range == (0.1, 1.0) and one.inputs[0].distribution == "uniform"
    assert one.msopst_name == "c_case_001_ND_float16"
    two = load(
        tmp_path,
        case(
            input_desc=[dict(case()["input_desc"][0], type=["float16", "float32"])],
            output_desc=[dict(case()["output_desc"][0], type=["float16", "float"])],
        ),
    )
    assert [c.msopst_name for c in two] == ["c_sub_case_001_ND_float16", "c_sub_case_002_ND_float"]
    assert [c.outputs[0].dtype for c in two] == ["float16", "float32"]


def test_each_tensor_crosses_its_fields_in_msopst_order(tmp_path):
    """format x shape x type per tensor, the i-th combination of every tensor in sub-case i."""
    x = dict(case()["input_desc"][0], shape=[[3, 8], [5, 2]], type=["float16", "bfloat16"])
    y = dict(case()["output_desc"][0], shape=[[3, 4], [5, 1]], type=["float16", "bfloat16"])
    got = [
        (c.inputs[0].shape, c.inputs[0].dtype, c.outputs[0].shape)
        for c in load(tmp_path, case(input_desc=[x], output_desc=[y]))
    ]
    assert got == [
        ((3, 8), "float16", (3, 4)),
        ((3, 8), "bfloat16", (3, 4)),
        ((5, 2), "float16", (5, 1)),
        ((5, 2), "bfloat16", (5, 1)),
    ]


def test_value_range_per_distribution():
    rng = np.random.default_rng(0)
    v = from_distribution("normal", 2.0, 0.5, rng, (200_000,))  # msOpST: mean 2, std 0.5 + 1e-4
    assert v.mean() == pytest.approx(2.0, abs=0.01) and v.std() == pytest.approx(0.5001, rel=0.01)
    u = from_distribution("uniform", -3.0, -1.0, rng, (100_000,))
    assert u.min() >= -3 and u.max() < -1 and u.mean() == pytest.approx(-2.0, abs=0.01)
    lap = from_distribution("laplace", 1.0, 2.0, rng, (200_000,))  # variance 2 b^2
    assert np.median(lap) == pytest.approx(1.0, abs=0.03) and lap.var() == pytest.approx(8.0, rel=0.05)
    b = from_distribution("beta", 2.0, 6.0, rng, (100_000,))
    assert b.mean() == pytest.approx(0.25, abs=0.01)
    assert from_distribution("relu", -1.0, 1.0, rng, (1000,)).min() == 0.0
    s = from_distribution("softmax", 0.0, 1.0, rng, (7, 9))
    assert s.sum() == pytest.approx(1.0)
    t = from_distribution("triangular", 0.0, 1.0, rng, (1000,))
    assert t.min() >= 0 and t.max() <= 1


def test_explicit_and_bin_values(tmp_path):
    data = np.arange(24, dtype=np.float32).reshape(3, 8) / 8
    (tmp_path / "x.bin").write_bytes(data.astype(np.float16).tobytes())
    (c,) = load(tmp_path, case(input_desc=[dict(case()["input_desc"][0], value="x.bin")]))
    np.testing.assert_array_equal(make_values(c.inputs[0], None, None, {}), data)
    bf = round_to([1.5, -2.0, 3.0e38, 0.0078125, 1 + 2**-9], "bfloat16")  # the last rounds to 1
    assert bf[-1] == 1.0 and (bf.view(np.uint32) & 0xFFFF == 0).all()
    (tmp_path / "b.bin").write_bytes((bf.view(np.uint32) >> 16).astype("<u2").tobytes())
    t = C.TensorSpec("b", "bfloat16", (5,), value=str(tmp_path / "b.bin"))
    np.testing.assert_array_equal(make_values(t, None, None, {}), bf)
    (c,) = load(tmp_path, case(input_desc=[dict(case()["input_desc"][0], value=data.tolist())]))
    np.testing.assert_array_equal(make_values(c.inputs[0], None, None, {}), data)


X = case()["input_desc"][0]
MSOPST_READS_OTHERWISE = {
    "fuzz with shapes": (case(fuzz_case_num=2), r"'shape' given with 'fuzz_case_num'"),
    "value not of the shape": (case(input_desc=[dict(X, value=[1.0, 2.0])]), r"'value' is of shape \[2\]"),
    "several types beside a value": (
        case(input_desc=[dict(X, value=np.ones((3, 8)).tolist(), type=["float16", "float32"])]),
        r"'type' lists several values beside an explicit 'value'",
    ),
    "short bin": (case(input_desc=[dict(X, value="x.bin")]), r"must hold 48 bytes .* found 4 bytes"),
    "missing bin": (case(input_desc=[dict(X, value="nope.bin")]), r"no such file"),
}


@pytest.mark.parametrize("name", MSOPST_READS_OTHERWISE)
def test_loud_where_msopst_reads_otherwise(tmp_path, name):
    raw, pattern = MSOPST_READS_OTHERWISE[name]
    (tmp_path / "x.bin").write_bytes(b"\0" * 4)
    with pytest.raises(C.CaseError, match=pattern):
        load(tmp_path, raw)


GOLDEN = """
import numpy as np

def swiglu(x, y, dim):
    assert set(x) == {"value", "dtype", "shape", "format"} and x["value"].dtype == np.float16
    assert x["shape"] == [3, 8] and y == {"dtype": "float16", "shape": [3, 4], "format": "ND"} and dim == -1
    a, b = np.split(x["value"].astype(np.float64), 2, axis=-1)
    return a / (1 + np.exp(-a)) * b
"""


def test_expected_data_function_called_as_msopst_calls_it(tmp_path):
    (tmp_path / "golden.py").write_text(GOLDEN)
    (c,) = load(
        tmp_path, case(calc_expect_func_file="golden.py:swiglu", attr=[{"name": "dim", "type": "int", "value": -1}])
    )
    (rec,) = V.run_case(c, "auto")
    assert rec["passed"], rec["failures"]


def test_error_threshold_rule():
    """msOpST's rule on hand-made outputs: absolute below diff_thd, relative above, the share, the 0.1 cap."""
    g = np.linspace(1.0, 2.0, 1000)
    assert check_error_threshold(g, g, "float32", (0.01, 0.0)).passed
    off = g.copy()
    off[:40] *= 1.02  # 4% of the elements 2% off
    assert check_error_threshold(off, g, "float32", (0.01, 0.05)).passed
    assert not check_error_threshold(off, g, "float32", (0.01, 0.03)).passed
    one = g.copy()
    one[0] *= 1.2  # one element 20% off: over msOpST's fixed 0.1 whatever the share
    c = check_error_threshold(one, g, "float32", (0.01, 0.05))
    assert not c.passed and "0.1" in c.failures[0]
    small = np.full(1000, 1e-4)
    assert check_error_threshold(small + 0.009, small, "float32", (0.01, 0.0)).passed  # d < diff_thd: absolute
    nan = g.copy()
    nan[3] = np.nan  # msOpST lets it pass; ours names the rule
    c = check_error_threshold(nan, g, "float32", (0.01, 0.05))
    assert not c.passed and c.failures == (c.failures[0],) and "NaN/Inf positions" in c.failures[0]


def test_auto_fails_what_msopst_fails(tmp_path):
    """bf16 with 10% of the elements 2% off: within MERE/MARE (T = 2^-7), but over msOpST's default
    error_threshold [0.01, 0.05] (10% of the elements > 1%), so auto fails it and says which rule."""
    (c,) = load(tmp_path, case())
    g = round_to(np.linspace(1.0, 2.0, 1000), "bfloat16").astype(np.float64)
    a = g.copy()
    a[::10] = round_to(a[::10] * 1.02, "bfloat16")
    assert V.P.check_mere_mare(a, g, "bfloat16", a).passed
    check = V.judge("auto", c, "bfloat16", a, a, g)
    assert not check.passed and all("msOpST's default error_threshold" in f for f in check.failures)
