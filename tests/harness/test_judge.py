"""The judge itself: the small-value domain, the double benchmark's sanity bound, op types in case files and
--op, and a user's case file (their own rope_customer tables) under every standard, with a correct and a
deliberately wrong golden."""

from __future__ import annotations

import json

import numpy as np
import pytest

from ascendc_ops import __main__ as cli, op_proto, precision as P
from ascendc_ops.harness.verify import suite as V
from ascendc_ops.harness.verify.cases import CaseError, load_file

STANDARDS = V.STANDARDS


def user_case(op: str, name: str, golden: str | None = None, x: str = "x", y: str = "y") -> dict:
    """A user's case: x uniform in [-2, 2], the user's own cos/sin uniform in [-1, 1], fp16 and fp32."""

    def t(n, shape, rng=None):
        d = {"name": n, "format": "ND", "type": ["float16", "float32"], "shape": shape}
        if rng:
            d.update({"value_range": [rng], "data_distribute": "uniform"})
        return d

    case = {
        "case_name": name,
        "op": op,
        "input_desc": [t(x, [2, 3, 17, 64], [-2, 2]), t("cos", [17, 64], [-1, 1]), t("sin", [17, 64], [-1, 1])],
        "output_desc": [t(y, [2, 3, 17, 64])],
    }
    if golden:
        case["calc_expect_func_file"] = golden
    return case


GOLDENS = '''
import numpy as np

# msOpST's calling convention: each input a dict whose "value" is the data in its dtype, each output
# {dtype, shape, format}, each attribute its value; upcast to float64 for a golden worth the name.


def tutorial(x, cos, sin, y):
    """rope_customer as the tutorial's kernel reads its tables: cos[2i], sin[2i] for both lanes of pair i."""
    x, cos, sin = (t["value"].astype(np.float64) for t in (x, cos, sin))
    c, s = cos[..., 0::2], sin[..., 0::2]
    xe, xo = x[..., 0::2], x[..., 1::2]
    return np.stack((xe * c - xo * s, xe * s + xo * c), axis=-1).reshape(x.shape)

def every_lane(x, cos, sin, y):
    """Deliberately wrong for rope_customer: lane 2i+1 reads cos[2i+1], sin[2i+1] (the elementwise form)."""
    x, cos, sin = (t["value"].astype(np.float64) for t in (x, cos, sin))
    rot = np.stack((-x[..., 1::2], x[..., 0::2]), axis=-1).reshape(x.shape)
    return x * cos + rot * sin

def tutorial_dx(dy, cos, sin, dx):
    dy, cos, sin = (t["value"].astype(np.float64) for t in (dy, cos, sin))
    c, s = cos[..., 0::2], sin[..., 0::2]
    de, do = dy[..., 0::2], dy[..., 1::2]
    return np.stack((de * c + do * s, do * c - de * s), axis=-1).reshape(dy.shape)
'''


def run_file(tmp_path, cases: list[dict], standard: str) -> list[dict]:
    (tmp_path / "goldens.py").write_text(GOLDENS)
    path = tmp_path / "cases.json"
    path.write_text(json.dumps(cases))
    return [r for c in V.load_cases([str(path)]) for r in V.run_case(c, standard)]


@pytest.mark.parametrize("standard", STANDARDS)
def test_user_case_file_right_and_wrong_golden(tmp_path, standard):
    """Passes for the correct op (the built-in golden and an equal custom one), both op spellings, fp16 and fp32;
    fails for a deliberately wrong golden under every standard."""
    good = [
        user_case("rope_customer", "builtin"),
        user_case("RopeCustomer", "typed"),
        user_case("ropecustomer", "custom", "goldens.py:tutorial"),
        user_case("RopeCustomerGrad", "grad", "goldens.py:tutorial_dx", x="dy", y="dx"),
    ]
    recs = run_file(tmp_path, good, standard)
    assert len(recs) == 8 and {r["op"] for r in recs} == {"rope_customer", "rope_customer_grad"}
    assert all(r["passed"] for r in recs), [(r["case"], r["failures"]) for r in recs if not r["passed"]]
    bad = run_file(tmp_path, [user_case("RopeCustomer", "wrong", "goldens.py:every_lane")], standard)
    assert len(bad) == 2 and not any(r["passed"] for r in bad), bad
    assert all(r["mere"] > 0.1 for r in bad)  # the wrong golden is far off, not marginally


def test_double_benchmark_fails_a_shared_error(tmp_path):
    """Ours and PyTorch agree with each other and not with the golden: ratio 1.0, yet the case fails, and the
    report says the comparison misses the sanity bound."""
    recs = run_file(tmp_path, [user_case("RopeCustomer", "wrong", "goldens.py:every_lane")], "ratio")
    for r in recs:
        assert r["ratio"]["mere"] == pytest.approx(1.0, rel=0.2) and r["torch_sanity"] > 1 and r["sanity"] > 1
        assert any("comparison implementation misses the sanity bound" in f for f in r["failures"]), r["failures"]

    rng = np.random.default_rng(0)
    g = rng.uniform(-1, 1, 4096)
    shared = g + 0.02 * rng.choice((-1, 1), g.size)  # one error, in both results
    check = P.check_ratio(shared, shared, g, "float32")
    assert not check.passed and check.numbers["mere_ratio"] == pytest.approx(1.0)
    assert [f.split(" on ")[0] for f in check.failures] == [
        "the comparison implementation misses the sanity bound",
        "ours misses the sanity bound",
    ]
    ours = g.astype(np.float32)  # ours right, the comparison wrong: still a failure, blamed on the comparison
    check = P.check_ratio(ours, shared, g, "float32")
    assert not check.passed and len(check.failures) == 1 and "comparison" in check.failures[0]
    assert P.check_ratio(ours, g.astype(np.float32), g, "float32").passed


def test_sanity_bound_values():
    """16 T max(|g|, S), S the golden's RMS floored at the smallest normal; the compute dtype can coarsen it."""
    g = np.array([0.0, 3.0, 4.0, 1e-9])
    s = np.sqrt(np.mean(g * g))
    np.testing.assert_allclose(P.sanity_bound(g, "float16"), 16 * 2.0**-10 * np.array([s, 3, 4, s]))
    np.testing.assert_allclose(P.sanity_bound(np.zeros(3), "float16"), 16 * 2.0**-10 * 2.0**-14)
    m32 = P.metrics(g + 1e-6, g, "float32")
    m16 = P.metrics(g + 1e-6, g, "float32", compute_dtype="float16")
    assert m16["sanity"] == pytest.approx(m32["sanity"] * 2.0**-13 / 2.0**-10)


def test_small_value_domain():
    """CANN's small-value domain: |g| below 2^-11 / 2^-8 / 2^-14 is judged by absolute error against 2^-16 /
    2^-16 / 2^-30, counted, and left out of MERE/MARE/RMSE."""
    assert P.SMALL_VALUE == {"float16": 2.0**-11, "bfloat16": 2.0**-8, "float32": 2.0**-14}
    assert P.SMALL_ERROR == {"float16": 2.0**-16, "bfloat16": 2.0**-16, "float32": 2.0**-30}
    g = np.array([1.0, 0.5, 2.0**-12, -(2.0**-12), 0.0, 2.0**-11])
    a = g + np.array([2.0**-12, 0.0, 2.0**-15, 2.0**-17, 2.0**-17, 0.0])
    m = P.metrics(a, g, "float16")
    assert m["small_count"] == 3 and m["small_share"] == pytest.approx(0.5)  # 2^-11 itself is not small
    assert m["small_err_count"] == 1  # only 2^-15 > 2^-16
    assert m["mare"] == pytest.approx(2.0**-12 / (1 + 1e-7)) and m["worst_index"] == 0  # small ones left out
    assert m["mere"] == pytest.approx(2.0**-12 / (1 + 1e-7) / 3)
    # the same errors read as relative errors would fail MARE (rel 0.5 at 2^-12); the domain passes them
    assert P.check_mere_mare(a, g, "float16").passed
    # ErrorCount: ours <= 2 * max(theirs, 1); with no comparison at most 2
    many = g.copy()
    many[2:5] += 2.0**-14
    assert not P.check_mere_mare(many, g, "float16").passed
    assert P.check_mere_mare(many, g, "float16", second=many).passed
    assert "ErrorCount 3" in P.check_mere_mare(many, g, "float16", second=a).failures[0]
    ratio = P.check_ratio(many, a, g, "float16")
    assert ratio.numbers["small_err_count_ratio"] == 3 and not ratio.passed


def test_op_types_in_case_files_and_cli(tmp_path, capsys):
    protos = op_proto.load_all()
    for name, p in protos.items():
        for spelling in (name, p.op, p.op.lower(), p.op.upper(), name.upper()):
            assert op_proto.resolve(spelling, protos) == name, spelling
    assert op_proto.resolve("RopeCustomerX", protos) is None and op_proto.resolve(3, protos) is None
    path = tmp_path / "c.json"
    path.write_text(json.dumps([user_case("RMSNORM", "bad")]))
    with pytest.raises(CaseError, match=r"input_desc names .* do not match rms_norm's"):
        load_file(path, V.OPS)  # resolved to rms_norm, then held to its prototype
    path.write_text(json.dumps([user_case("Rope", "bad")]))
    with pytest.raises(CaseError, match=r"unknown op 'Rope' .*RopeCustomer"):
        load_file(path, V.OPS)
    out = tmp_path / "v.json"
    rc = cli.main(
        [
            "verify",
            "--quick",
            "--op",
            "RmsNorm",
            "SWIGLU_grad",
            "--dtype",
            "float32",
            "--json",
            str(out),
            "--no-progress",
        ]
    )
    assert rc == 0, capsys.readouterr().out[-2000:]
    assert {r["op"] for r in json.loads(out.read_text())["results"]} == {"rms_norm", "swiglu_grad"}
    with pytest.raises(SystemExit) as e:
        cli.main(["verify", "--op", "NoSuchOp"])
    assert e.value.code == 2 and "invalid choice: 'NoSuchOp'" in capsys.readouterr().err
    assert cli.main(["info"]) == 0
    info = capsys.readouterr().out
    assert "RopeCustomer" in info and "rope_customer(Tensor x" in info


def test_golden_beyond_the_output_range_is_the_inf_it_rounds_to():
    """An fp16 output of 1e6 is inf (cann-bench's fp16 +-65504 cases): the golden is judged rounded to the output
    dtype's range, and a finite golden within it still fails an inf."""
    import torch

    for dtype, tdtype in (("float16", torch.float16), ("bfloat16", torch.bfloat16), ("float32", torch.float32)):
        top = float(torch.finfo(tdtype).max)
        half_ulp = (P.OVERFLOW[dtype] - top) * (1 - 1e-3)  # just below the midpoint: rounds down to top
        g = np.array([top, top + half_ulp, P.OVERFLOW[dtype], -2 * top, 1.0])
        np.testing.assert_array_equal(P.rounded_overflow(g, dtype), [top, top + half_ulp, np.inf, -np.inf, 1.0])
        assert torch.tensor(P.OVERFLOW[dtype], dtype=torch.float64).to(tdtype).isinf()  # the midpoint: inf
    g = np.array([1e6, -7e4, 65504.0, 1.0])
    ours = np.array([np.inf, -np.inf, 65504.0, 1.0])
    assert P.metrics(ours, g, "float16")["nan_inf_match"]
    assert not P.metrics(np.array([np.inf, -np.inf, np.inf, 1.0]), g, "float16")["nan_inf_match"]
