"""The command line (`ascendc-ops verify | bench | info`), run as a user runs it: in a subprocess.

Malformed inputs are also checked in-process through __main__.main (same code path, no interpreter
start-up per case) to keep this file fast; two of them go through a subprocess as well to prove no
traceback reaches the terminal.
"""

from __future__ import annotations

import argparse
import ast
import collections
import csv
import json
import os
import re
import struct
import subprocess
import sys
import zlib
from pathlib import Path

import numpy as np
import pytest

import ascendc_ops
from ascendc_ops import __main__ as cli
from ascendc_ops.harness.families import rms_norm as NF, swiglu as SF
from ascendc_ops.harness.verify import cases as C, suite as V
from ascendc_ops.ops import rms_norm_reference as R

ROOT = Path(__file__).resolve().parents[2]
CASES = ROOT / "cases"
SCRIPT = Path(sys.executable).parent / "ascendc-ops"


def run_cli(*args, cwd=None, module=False):
    cmd = [sys.executable, "-m", "ascendc_ops"] if module or not SCRIPT.exists() else [str(SCRIPT)]
    env = dict(os.environ, PYTHONPATH=str(ROOT / "python"))
    env.pop("ASCENDC_OPS_TRACEBACK", None)
    return subprocess.run(
        cmd + [str(a) for a in args], capture_output=True, text=True, cwd=cwd or ROOT, env=env, timeout=300
    )


def assert_clean_error(proc_or_rc, err: str | None = None, code: int = 2):
    rc = proc_or_rc.returncode if hasattr(proc_or_rc, "returncode") else proc_or_rc
    err = proc_or_rc.stderr if err is None else err
    assert rc == code, f"exit {rc}, stderr {err!r}"
    assert "Traceback" not in err
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and "error" in lines[0], err
    return lines[0]


def x_case(name="c", **over):
    """A small valid rotary_mul case; keyword arguments replace fields."""
    case = {
        "case_name": name,
        "op": "rotary_mul",
        "input_desc": [
            {
                "name": "x",
                "format": "ND",
                "type": "float16",
                "shape": [2, 3, 5, 16],
                "value_range": [[-2, 2]],
                "data_distribute": "uniform",
            },
            {"name": "r1", "format": "ND", "type": "float16", "shape": [1, 1, 5, 16], "value": "rope_cos"},
            {"name": "r2", "format": "ND", "type": "float16", "shape": [1, 1, 5, 16], "value": "rope_sin"},
        ],
        "output_desc": [{"name": "y", "format": "ND", "type": "float16", "shape": [2, 3, 5, 16]}],
        "attr": [{"name": "rotary_mode", "type": "string", "value": "half"}],
    }
    case.update(over)
    return case


def write(tmp_path, data, name="cases.json") -> Path:
    p = tmp_path / name
    p.write_text(data if isinstance(data, str) else json.dumps(data))
    return p


# ---------------------------------------------------------------- info
def test_info(tmp_path):
    out = tmp_path / "info.json"
    p = run_cli("info", "--json", out)
    assert p.returncode == 0, p.stderr
    for text in ("cpu-twin", "UB 196352 bytes", "184 KiB", "library:", "torch 2.13", "rotary_mul("):
        assert text in p.stdout, text
    d = json.loads(out.read_text())
    assert d["backends"][0] == "cpu-twin" and d["platform"]["ub_bytes"] == 196352
    assert d["platform"]["ub_budget_bytes"] == 184 * 1024 and d["platform"]["vector_cores"] >= 1
    assert Path(d["library"]).exists() and d["commit"]
    assert set(d["ops"]) >= {"rotary_mul", "rotary_mul_grad", "rope_customer", "rope_customer_grad"}
    assert set(V.OPS) <= set(d["ops"])  # every op the harness verifies is in the library


def test_python_dash_m_and_usage_errors():
    p = run_cli("info", module=True)
    assert p.returncode == 0 and "cpu-twin" in p.stdout, p.stderr
    assert_clean_error(run_cli("verify", "--op", "no_such_op"))
    assert_clean_error(run_cli("frobnicate"))


# ---------------------------------------------------------------- verify
def test_verify_default_suite_quick(tmp_path):
    out = tmp_path / "v.json"
    p = run_cli(
        "verify", "--quick", "--op", "rotary_mul", "rope_customer_grad", "--dtype", "float16", "float32", "--json", out
    )
    assert p.returncode == 0, p.stdout + p.stderr
    assert "| case | op | attr | dtype |" in p.stdout and "MERE" in p.stdout and "ratio" in p.stdout
    d = json.loads(out.read_text())
    res = d["results"]
    # quick suite: (2 head dims x 2 row counts + 2 cancel shapes), rotary_mul x 2 modes + rope_customer_grad,
    # 2 dtypes
    assert d["summary"] == {"cases": 36, "outputs": 36, "passed": 36, "failed": 0}
    assert {r["op"] for r in res} == {"rotary_mul", "rope_customer_grad"}
    assert {r["dtype"] for r in res} == {"float16", "float32"}
    assert {r["judged_by"] for r in res} == {"MERE/MARE", "double benchmark"}  # auto: fp16 literal, fp32 ratio
    for r in res:
        assert r["passed"] and r["mere"] >= 0 and r["mare"] >= r["mere"] and 0 <= r["eb"] <= 1
        assert set(r["ratio"]) == {"mere", "mare", "rmse", "small_err_count"}
        assert 0 <= r["small_share"] <= 1 and r["sanity"] <= 0.5 and r["torch_sanity"] <= 0.5
    assert any(r["small_share"] > 0 for r in res) and "small err ours/torch" in p.stdout
    # each output's bytes as sha256: two runs compare bit for bit; the same inputs give the same bytes
    assert all(re.fullmatch(r"[0-9a-f]{64}", r["sha256"]) for r in res)
    again = run_cli("verify", "--quick", "--op", "rotary_mul", "--dtype", "float16", "--json", tmp_path / "w.json")
    assert again.returncode == 0
    twice = {(r["case"], r["output"]): r["sha256"] for r in json.loads((tmp_path / "w.json").read_text())["results"]}
    first = {(r["case"], r["output"]): r["sha256"] for r in res if r["op"] == "rotary_mul" and r["dtype"] == "float16"}
    assert first and twice == first


NEW_OPS = ("swiglu", "swiglu_grad", "rms_norm", "rms_norm_grad", "add_rms_norm", "add_rms_norm_grad")


def test_verify_new_ops_quick(tmp_path):
    """The quick suites of SwiGLU and the RMSNorm ops: every dtype (and (x, gamma) pair), every output judged."""
    out = tmp_path / "v.json"
    p = run_cli("verify", "--quick", "--op", *NEW_OPS, "--json", out)
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr
    res = json.loads(out.read_text())["results"]
    assert {r["op"] for r in res} == set(NEW_OPS) and all(r["passed"] for r in res)
    outputs = {(r["op"], r["output"]) for r in res}
    assert outputs == {
        ("swiglu", "y"),
        ("swiglu_grad", "dx"),
        ("rms_norm", "y"),
        ("rms_norm", "rstd"),
        ("rms_norm_grad", "dx"),
        ("rms_norm_grad", "dgamma"),
        ("add_rms_norm", "y"),
        ("add_rms_norm", "rstd"),
        ("add_rms_norm", "x"),
        ("add_rms_norm_grad", "dx"),
        ("add_rms_norm_grad", "dgamma"),
    }
    for r in res:  # auto: each output by its own dtype (rstd is always fp32, dgamma takes gamma's dtype)
        want = "double benchmark" if r["out_dtype"] == "float32" else "MERE/MARE"
        assert r["judged_by"] == want, r
    pairs = {(r["dtype"], r["out_dtype"]) for r in res if r["op"] == "rms_norm_grad" and r["output"] == "dgamma"}
    assert pairs == {
        ("float16", "float32"),
        ("bfloat16", "float32"),
        ("float16", "float16"),
        ("bfloat16", "bfloat16"),
        ("float32", "float32"),
    }
    assert {r["dtype"] for r in res if r["op"] == "swiglu"} == {"float16", "bfloat16", "float32"}
    # the sanity bound (precision.py) holds for PyTorch's results with room: at most half of it here (the
    # full default suite: a quarter, `ascendc-ops verify --json`), and for ours
    assert max(r["torch_sanity"] for r in res) <= 0.5 and max(r["sanity"] for r in res) <= 0.5


def test_default_suites_cover_odd_and_model_shapes():
    """The full default suites (expanded only, not run): rows 1/7/83, hidden 1/8/769/5125, swiglu inner up to
    11008, one model shape per op, data through zero and a cancellation-prone case per op."""
    cases = V.default_cases(NEW_OPS)
    shapes = {op: {c.shape for c in cases if c.op == op} for op in NEW_OPS}
    for op in ("rms_norm", "add_rms_norm", "rms_norm_grad", "add_rms_norm_grad"):
        assert {(r, h) for r in (1, 7, 83) for h in (1, 8, 769, 5125)} | {NF.NORM_MODEL} <= shapes[op], op
    for op in ("swiglu", "swiglu_grad"):
        x_shapes = {c.inputs[-1].shape for c in cases if c.op == op}
        assert {(r, 2 * i) for r in (1, 7, 83) for i in (1, 8, 769, 5125, 11008)} | {SF.SWIGLU_MODEL} <= x_shapes
    for op in NEW_OPS:  # outputs near zero are no longer avoided: plain ranges through 0, and cancel cases
        mine = [c for c in cases if c.op == op]
        assert any(c.name.startswith(f"{op}_") and "_cancel" in c.name for c in mine), op
        ranges = [t.value_range for c in mine for t in c.inputs if t.value is None]
        assert ranges and any(lo < 0 < hi for lo, hi in ranges), op


def test_norm_grad_golden_matches_reference():
    """verify's rms_norm_grad golden (taking rstd as given) is reference.rms_norm_backward for the exact rstd."""
    rng = np.random.default_rng(0)
    x, dy, g = rng.normal(size=(5, 3, 40)), rng.normal(size=(5, 3, 40)), rng.normal(size=(3, 40))
    rstd = 1 / np.sqrt(np.mean(x * x, axis=(1, 2), keepdims=True) + 1e-6)
    dx, dg = NF.golden_rms_norm_grad(dy, x, rstd, g)
    rdx, rdg = R.rms_norm_backward(dy, x, g, 1e-6)
    np.testing.assert_allclose(dx, rdx, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(dg, rdg, rtol=1e-12, atol=1e-14)
    dxo = rng.normal(size=x.shape)
    np.testing.assert_allclose(
        NF.golden_rms_norm_grad(dy, x, rstd, g, dxo)[0],
        R.add_rms_norm_backward(dy, dxo, x, np.zeros_like(x), g, 1e-6)[0],
        rtol=1e-12,
        atol=1e-14,
    )


def test_verify_new_op_case_files(tmp_path, capsys):
    """The shipped example files of the new ops pass (list expansion, odd shapes, fuzz entries); in-process
    through __main__.main (the CLI's code path) to save an interpreter start-up."""
    out = tmp_path / "v.json"
    files = [str(CASES / f) for f in ("swiglu/swiglu.json", "rms_norm/rms_norm.json", "rms_norm/add_rms_norm.json")]
    rc = cli.main(["verify", "--cases", *files, "--json", str(out), "--no-progress"])
    captured = capsys.readouterr()
    assert rc == 0, captured.out[-3000:] + captured.err
    res = json.loads(out.read_text())["results"]
    assert {r["op"] for r in res} == set(NEW_OPS)
    assert any(r["judged_by"] == "msOpST error_threshold" for r in res)  # rms_norm_fp16_normal's error_threshold
    names = {r["case"] for r in res}
    for fuzz in ("swiglu_fuzz#3", "rms_norm_fuzz#9", "add_rms_norm_grad_fuzz#7"):
        assert fuzz in names, fuzz


def test_verify_shipped_case_files(tmp_path):
    out = tmp_path / "v.json"
    p = run_cli("verify", "--cases", CASES / "rope/rotary_mul.json", CASES / "rope/rope_customer.json", "--json", out)
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr
    res = json.loads(out.read_text())["results"]
    ops = {r["op"] for r in res}
    assert ops == {"rotary_mul", "rotary_mul_grad", "rope_customer", "rope_customer_grad"}
    assert any(r["judged_by"] == "msOpST error_threshold" for r in res)  # cases with error_threshold


def test_verify_standards(tmp_path):
    p = run_cli(
        "verify",
        "--quick",
        "--op",
        "rope_customer",
        "--dtype",
        "float16",
        "--standard",
        "double_thousandth",
        "--json",
        tmp_path / "v.json",
    )
    assert p.returncode == 0, p.stdout + p.stderr
    assert {r["judged_by"] for r in json.loads((tmp_path / "v.json").read_text())["results"]} == {"double thousandth"}


GOLDENS = """
import numpy as np

def right(x, r1, r2, y, rotary_mode):  # msOpST's call: {"value", "dtype", "shape", "format"} per tensor
    assert x["dtype"] == "float16" and y["shape"] == x["shape"] and "value" not in y
    x, r1, r2 = (t["value"].astype(np.float64) for t in (x, r1, r2))
    x1, x2 = np.split(x, 2, axis=-1)
    return x * r1 + np.concatenate((-x2, x1), axis=-1) * r2

def wrong(x, r1, r2, y, rotary_mode):
    return right(x, r1, r2, y, rotary_mode) * 1.01  # 1% off: fails every fp16 standard
"""


def test_verify_custom_golden_and_failure_exit(tmp_path):
    (tmp_path / "goldens.py").write_text(GOLDENS)
    path = write(
        tmp_path,
        [
            x_case("good", calc_expect_func_file="goldens.py:right"),
            x_case("bad", calc_expect_func_file="goldens.py:wrong"),
        ],
    )
    out = tmp_path / "v.json"
    p = run_cli("verify", "--cases", path, "--json", out, cwd=tmp_path)
    assert p.returncode == 1, p.stdout + p.stderr
    assert "FAIL bad" in p.stdout and "Traceback" not in p.stdout + p.stderr
    res = {r["case"]: r for r in json.loads(out.read_text())["results"]}
    assert res["good"]["passed"] and not res["bad"]["passed"]
    assert res["bad"]["mere"] == pytest.approx(0.01, rel=0.05)
    assert json.loads(out.read_text())["summary"]["failed"] == 1


def test_expansion_and_fuzz(tmp_path):
    """type x 2 (lockstep over tensors) * shape x 2 (lockstep) * rotary_mode x 2 = 8 sub-cases; fuzz is seeded."""
    case = x_case("grid")
    for t in case["input_desc"] + case["output_desc"]:
        t["type"] = ["float16", "bfloat16"]
    case["input_desc"][0]["shape"] = case["output_desc"][0]["shape"] = [[2, 3, 5, 16], [1, 2, 7, 8]]
    for t in case["input_desc"][1:]:
        t["shape"] = [[1, 1, 5, 16], [1, 1, 7, 8]]
    case["attr"][0]["value"] = ["half", "interleave"]
    fuzz = x_case("fz", fuzz_case_num=3)
    for t in fuzz["input_desc"] + fuzz["output_desc"]:
        t.pop("shape")
    path = write(tmp_path, [case, fuzz])
    cs = C.load_file(path, V.OPS)
    grid = [c for c in cs if c.name.startswith("grid")]
    assert len(grid) == 8 and len({c.name for c in grid}) == 8
    assert {(c.dtype, c.shape, c.attrs["rotary_mode"]) for c in grid} == {
        (d, s, m)
        for d in ("float16", "bfloat16")
        for s in ((2, 3, 5, 16), (1, 2, 7, 8))
        for m in ("half", "interleave")
    }
    for c in grid:  # lockstep: every tensor of a sub-case has the same dtype, tables match x's rows
        assert {t.dtype for t in c.inputs + c.outputs} == {c.dtype}
        assert c.inputs[1].shape[-2:] == c.shape[-2:]
    fz = [c for c in cs if c.name.startswith("fz")]
    again = [c for c in C.load_file(path, V.OPS) if c.name.startswith("fz")]
    assert len(fz) == 3 and [c.shape for c in fz] == [c.shape for c in again]
    assert len({tuple(t.shape for t in c.inputs) for c in fz}) == 3


# ---------------------------------------------------------------- malformed case files
def _missing_shape():
    c = x_case()
    del c["input_desc"][1]["shape"]
    return c


def _set_input(i, **kv):
    c = x_case()
    c["input_desc"][i].update(kv)
    return c


MALFORMED = {
    "bad_json": ('[{"case_name": "a", ', r"not valid JSON"),
    "not_a_list": ('{"cases": 1}', r"missing field 'case_name'"),
    "empty": ("[]", r"expected a JSON list of cases"),
    "unknown_op": ([x_case(op="rms_norm_xyz")], r"unknown op 'rms_norm_xyz'"),
    "missing_field": ([_missing_shape()], r"input 'r1': missing field 'shape'"),
    "missing_output_desc": (
        [{k: v for k, v in x_case().items() if k != "output_desc"}],
        r"missing field 'output_desc'",
    ),
    "wrong_rank": ([_set_input(0, shape=[3, 5, 16, 2, 2])], r"op rejects this case: rotary_mul: x must have rank 3"),
    "impossible_broadcast": (
        [
            x_case(
                input_desc=[x_case()["input_desc"][0]]
                + [dict(d, shape=[1, 1, 4, 16]) for d in x_case()["input_desc"][1:]]
            )
        ],
        r"r1 of shape \[1, 1, 4, 16\] does not broadcast",
    ),
    "tables_differ": ([_set_input(1, shape=[1, 1, 4, 16])], r"r1 and r2 must have one shape"),
    "odd_head_dim": (
        [x_case(input_desc=[dict(d, shape=d["shape"][:-1] + [15]) for d in x_case()["input_desc"]])],
        r"must be even",
    ),
    "negative_dim": ([_set_input(0, shape=[2, -3, 5, 16])], r"negative dim"),
    "too_big": ([_set_input(0, shape=[4096, 4096, 4096, 16])], r"more than the harness allows"),
    "bad_type": ([_set_input(0, type="int8")], r"unsupported type 'int8'"),
    "bad_distribution": ([_set_input(0, data_distribute="poisson")], r"data_distribute 'poisson'"),
    "bad_range": ([_set_input(0, value_range=[[2, -2]])], r"min <= max"),
    "unknown_attr": ([x_case(attr=[{"name": "mode", "type": "string", "value": "half"}])], r"unknown attr 'mode'"),
    "bad_attr_value": (
        [x_case(attr=[{"name": "rotary_mode", "type": "string", "value": "diag"}])],
        r"rotary_mode must be 'half' or 'interleave'",
    ),
    "lockstep_mismatch": (
        [x_case(input_desc=[dict(d, shape=[d["shape"]] * (2 + i)) for i, d in enumerate(x_case()["input_desc"])])],
        r"'shape' lists of the tensors differ in length",
    ),
    "output_shape": (
        [x_case(output_desc=[{"name": "y", "format": "ND", "type": "float16", "shape": [2, 3, 5, 8]}])],
        r"declared with shape \[2, 3, 5, 8\]",
    ),
    "output_dtype": (
        [x_case(output_desc=[{"name": "y", "format": "ND", "type": "float32", "shape": [2, 3, 5, 16]}])],
        r"declared float32",
    ),
    "unknown_generator": ([_set_input(1, value="rope_tan")], r"unknown value generator 'rope_tan'"),
    "golden_missing": ([x_case(calc_expect_func_file="nope.py:f")], r"does not exist"),
    "golden_syntax": ([x_case(calc_expect_func_file="broken.py:f")], r"cannot load .*SyntaxError"),
    "fuzz_bad": ([x_case(fuzz_case_num=-1)], r"fuzz_case_num"),
    "bad_threshold": ([x_case(error_threshold=[0.001])], r"error_threshold"),
    "unknown_field": ([x_case(shapes=[1])], r"unknown field 'shapes'"),
    "input_names": ([x_case(input_desc=x_case()["input_desc"][:2])], r"input_desc names \['x', 'r1'\] do not match"),
}


@pytest.mark.parametrize("name", MALFORMED)
def test_malformed_case_files(tmp_path, capsys, name):
    data, pattern = MALFORMED[name]
    (tmp_path / "broken.py").write_text("def f(:\n")
    path = write(tmp_path, data)
    rc = cli.main(["verify", "--cases", str(path)])
    err = capsys.readouterr().err
    line = assert_clean_error(rc, err)
    assert str(path) in line
    assert re.search(pattern, line), line


def test_malformed_through_subprocess(tmp_path):
    assert "not valid JSON" in assert_clean_error(run_cli("verify", "--cases", write(tmp_path, "[{,]")))
    line = assert_clean_error(run_cli("verify", "--cases", write(tmp_path, [_set_input(0, shape=[3, 5, 16, 2, 2])])))
    assert "rank" in line
    assert "no such file" in assert_clean_error(run_cli("verify", "--cases", tmp_path / "absent.json"))


# ---------------------------------------------------------------- bench
def png_info(data: bytes) -> tuple[int, int, int, int]:
    """(width, height, bit depth, colour type) after checking the signature, IHDR, every CRC and the pixels
    (8-bit RGB or RGBA)."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, chunks = 8, []
    while pos < len(data):
        (n,) = struct.unpack(">I", data[pos : pos + 4])
        kind, body = data[pos + 4 : pos + 8], data[pos + 8 : pos + 8 + n]
        (crc,) = struct.unpack(">I", data[pos + 8 + n : pos + 12 + n])
        assert crc == zlib.crc32(kind + body), kind
        chunks.append((kind, body))
        pos += 12 + n
    assert chunks[0][0] == b"IHDR" and len(chunks[0][1]) == 13 and chunks[-1][0] == b"IEND"
    w, h, depth, ctype = struct.unpack(">IIBB", chunks[0][1][:10])
    raw = zlib.decompress(b"".join(b for k, b in chunks if k == b"IDAT"))
    assert len(raw) == h * (1 + w * {2: 3, 6: 4}[ctype])
    return w, h, depth, ctype


def test_bench_csv_plot_presets(tmp_path):
    out_csv = tmp_path / "b.csv"
    common = ["--op", "rotary_mul", "--dtype", "float32", "--quick", "--no-compile", "--csv", out_csv]
    p = run_cli("bench", "--shape", "1,2,8,32", "--mode", "fwd", "full", *common)
    assert p.returncode == 0, p.stderr
    assert "| rotary_mul | 1x2x8x32 | float32 | full |" in p.stdout
    assert "2/2 done" in p.stderr  # progress bar
    p = run_cli("bench", "--preset", "qwen2.5-7b", "--seq", "4", "--mode", "bwd", *common)
    assert p.returncode == 0, p.stderr
    with open(out_csv, newline="") as f:
        rows = list(csv.DictReader(f))
    assert out_csv.read_text().count("time,cpu,") == 1  # appended under one header
    assert [(r["shape"], r["pass"], r["preset"]) for r in rows] == [
        ("1x2x8x32", "fwd", ""),
        ("1x2x8x32", "full", ""),
        ("1x28x4x128", "bwd", "qwen2.5-7b"),
        ("1x4x4x128", "bwd", "qwen2.5-7b"),
    ]  # q: 28 heads, k: 4 kv heads
    for r in rows:
        for col in ("cpu", "threads", "allocator", "torch", "commit", "ours_median", "copy_median", "vs_torch"):
            assert r[col], col
        assert float(r["ours_median"]) > 0 and r["compile_median"] == ""
    assert int(rows[1]["bytes"]) == 2 * int(rows[0]["bytes"])  # full = both passes
    for r in rows:
        assert r["isa"] == ascendc_ops.isa() and "other processes used" in r["load"]
    # docs/benchmarks.md's tables are made from this CSV: one section (one date and machine), every row
    tables = subprocess.run(
        [sys.executable, str(ROOT / "tools" / "bench_tables.py"), str(out_csv)], capture_output=True, text=True
    )
    assert tables.returncode == 0, tables.stderr
    assert tables.stdout.count("### ") == 1 and f"ascendc-ops ISA path {ascendc_ops.isa()}" in tables.stdout
    assert tables.stdout.count("\n| rotary_mul | ") == 4 and tables.stdout.count("(qwen2.5-7b) | float32 | bwd |") == 2


def test_bench_plot_draws_or_names_the_extra(tmp_path):
    """--plot draws with matplotlib (the [plot] extra); without it, one clear line before any timing."""
    from ascendc_ops.harness import plot

    out_png = tmp_path / "b.png"
    p = run_cli(
        "bench",
        "--op",
        "rotary_mul",
        "--shape",
        "1,2,8,32",
        "--dtype",
        "float32",
        "--mode",
        "fwd",
        "full",
        "--quick",
        "--no-compile",
        "--no-progress",
        "--plot",
        out_png,
    )
    if plot.available():
        assert p.returncode == 0, p.stderr
        w, h, depth, ctype = png_info(out_png.read_bytes())
        assert w > 100 and h > 50 and depth == 8
        assert f"wrote the chart to {out_png}" in p.stdout
    else:
        line = assert_clean_error(p)
        assert "pip install 'ascendc-ops[plot]'" in line and "matplotlib" in line
        assert p.stdout == "" and not out_png.exists()


@pytest.mark.parametrize(
    "args,pattern",
    [
        (
            ["--suite", "model", "--op", "rope_customer"],
            r"bench model: error: unrecognized arguments: --op rope_customer",
        ),
        (
            ["moe", "--no-compile", "--rounds", "2"],
            r"bench moe: error: unrecognized arguments: --no-compile --rounds 2",
        ),
        (["--no-eager"], r"bench ops: error: unrecognized arguments: --no-eager"),
        (["--suite", "moe", "--dtype", "float16"], r"bench moe: error: argument --dtype: invalid choice: 'float16'"),
        (["--suite", "moe", "--case", "E9"], r"invalid choice: 'E9'"),
        (["--suite", "npu"], r"bench: error: argument SUITE: invalid choice: 'npu'"),
        (["--preset", "cann-bench", "llama-7b"], r"bench cann-bench: error: unrecognized arguments: --preset llama-7b"),
        (
            ["--suite", "moe", "--preset", "cann-bench"],
            r"bench moe: error: unrecognized arguments: --preset cann-bench",
        ),
    ],
)
def test_bench_suite_options(capsys, args, pattern):
    """Each bench suite is a subcommand with its own options: another suite's option is an error, not ignored."""
    with pytest.raises(SystemExit) as e:  # argparse refuses them from inside parse_args
        cli.main(["bench", *args])
    assert re.search(pattern, assert_clean_error(e.value.code, capsys.readouterr().err))


def suites(command: str) -> dict:
    """{suite name: its parser} of a command with suites, from the parser itself."""
    parser = cli.build_parser()
    (commands,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    (found,) = [a for a in commands.choices[command]._actions if isinstance(a, argparse._SubParsersAction)]
    return dict(found.choices)


def options_of(parser) -> set:
    return {s for a in parser._actions for s in a.option_strings} - {"-h", "--help"}


# a suite's own option is refused by each of the others (bench: 7 suites; optimizer's --estimate adds 6)
@pytest.mark.parametrize("command,count", [("verify", 4), ("bench", 204)])
def test_every_suite_refuses_every_other_suites_options(capsys, command, count):
    """Walks the parsers: any option one suite takes and another does not is refused by argparse in the other."""
    found = suites(command)
    assert len(found) >= 2 and "ops" in found and "cann-bench" in found
    refused = 0
    for mine, parser in found.items():
        for other in found.values():
            for option in sorted(options_of(other) - options_of(parser)):
                with pytest.raises(SystemExit) as e:
                    cli.build_parser().parse_args([command, mine, option])
                line = assert_clean_error(e.value.code, capsys.readouterr().err)
                assert line == f"ascendc-ops {command} {mine}: error: unrecognized arguments: {option}"
                refused += 1
    assert refused == count  # verify: ops' --cases and the three cann-bench options


@pytest.mark.parametrize(
    "older,now",
    [
        (["bench"], ["bench", "ops"]),
        (["bench", "--op", "swiglu", "--quick", "--preset", "llama-7b"], ["bench", "ops", "--op", "swiglu", "--quick",
                                                                        "--preset", "llama-7b"]),
        (["bench", "--suite", "moe", "--quick", "--case", "E8"], ["bench", "moe", "--quick", "--case", "E8"]),
        (["bench", "--quick", "--suite=model", "--rounds", "3"], ["bench", "model", "--quick", "--rounds", "3"]),
        (["bench", "--preset", "cann-bench", "--cann-case", "rms_norm:16"], ["bench", "cann-bench", "--cann-case",
                                                                           "rms_norm:16"]),
        (["bench", "--quick", "--preset=cann-bench", "--no-accuracy"], ["bench", "cann-bench", "--quick",
                                                                      "--no-accuracy"]),
        (["verify", "--op", "rms_norm", "--cases", "cases/rms_norm/rms_norm.json"],
         ["verify", "ops", "--op", "rms_norm", "--cases", "cases/rms_norm/rms_norm.json"]),
        (["verify", "--quick", "--preset", "cann-bench", "--op", "swiglu"], ["verify", "cann-bench", "--quick", "--op",
                                                                            "swiglu"]),
    ],
)  # fmt: skip
def test_older_spellings_name_the_suite(older, now, monkeypatch):
    """What a user may have scripted before the suites were subcommands parses as the subcommand does."""
    monkeypatch.chdir(ROOT)  # --cases checks that its file exists
    parser = cli.build_parser()
    parsed = vars(parser.parse_args(older))
    assert parsed == vars(parser.parse_args(now)) and parsed["suite"] == now[1]


TWO_MEANINGS = ("--shape", "--dtype", "--mode", "--json")


def leaf_parsers(parser=None) -> list:
    """Every parser that takes options and no subcommand: a command, or a suite of one."""
    parser = parser or cli.build_parser()
    subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    return [leaf for sub in subs for p in sub.choices.values() for leaf in leaf_parsers(p)] if subs else [parser]


def test_each_option_is_defined_once():
    """Every option is written once in the CLI's source: what several parsers take comes from one function
    (cli/options.py). Four spellings have two meanings, kept because users script them: one op call (estimate,
    profile) takes one --shape, --dtype and --mode where bench and verify take lists, and its --json is a flag
    (print JSON) where the others' --json OUT writes a file."""
    defined = collections.Counter()
    for path in sorted((ROOT / "python" / "ascendc_ops" / "cli").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call) and getattr(node.func, "attr", None) == "add_argument":
                defined[node.args[0].value] += 1
    assert {"--op", "--quick", "--uncalibrated", "--no-progress", "--cann-case", "op"} <= set(defined)
    assert {name: n for name, n in defined.items() if n > 1} == dict.fromkeys(TWO_MEANINGS, 2)
    # walked through the parsers: a spelling means one thing wherever it is taken (the same kind of action,
    # value type and count), the four above two things each
    kinds = collections.defaultdict(set)
    for parser in leaf_parsers():
        for a in parser._actions:
            for option in set(a.option_strings) - {"-h", "--help"}:
                kinds[option].add((type(a).__name__, a.type, a.nargs))
    assert {o for o, k in kinds.items() if len(k) > 1} == set(TWO_MEANINGS)
    assert all(len(kinds[o]) == 2 for o in TWO_MEANINGS)
    assert len(leaf_parsers()) == 12  # verify: 2 suites, bench: 7, estimate, profile, info


def test_bench_suite_moe_quick_block(tmp_path):
    """--suite moe runs the experts block through HF's Qwen3MoeExperts: the fast part, one case and dtype."""
    pytest.importorskip("transformers")
    p = run_cli(
        "bench",
        "--suite",
        "moe",
        "--quick",
        "--case",
        "E8",
        "--dtype",
        "float32",
        "--no-eager",
        "--no-memory",
        "--no-model",
        "--no-gmm",
    )
    assert p.returncode == 0, p.stderr
    assert "| E=8 top2 H=1024 I=2816 T=256 | float32 | fwd | - |" in p.stdout
    assert "| E=8 top2 H=1024 I=2816 T=256 | float32 | fwd+bwd | - |" in p.stdout
    assert "grouped_matmul alone" not in p.stdout and "Tiny Qwen3-MoE" not in p.stdout


def test_bench_norm_ops_tiny():
    """rms_norm / add_rms_norm entries: ours vs HF eager (dx through y only), with targets; --no-compile keeps
    this fast (torch.compile of the same HF code is exercised by the rotary_mul/swiglu rows of a full run)."""
    p = run_cli(
        "bench",
        "--op",
        "rms_norm",
        "add_rms_norm",
        "--quick",
        "--shape",
        "16,64",
        "--dtype",
        "bfloat16",
        "--mode",
        "fwd",
        "bwd",
        "--no-progress",
        "--no-compile",
    )
    assert p.returncode == 0, p.stderr
    for op in ("rms_norm", "add_rms_norm"):
        for ps in ("fwd", "bwd"):
            assert f"| {op} | 16x64 | bfloat16 | {ps} |" in p.stdout, (op, ps)
    assert p.stdout.count("(>=5x) | n/a | ") == 2 and p.stdout.count("(>=60%) |") == 2  # fwd targets
    assert p.stdout.count("(>=2x) | n/a | - |") == 2  # bwd: >= 2x eager autograd only
    assert "ours differs" not in p.stdout  # ours agrees with HF eager and compile


def test_bench_norm_bytes():
    """Bytes counted honestly: fwd x (x1, x2) and gamma read, y (and x) and fp32 rstd written; bwd dy, x, rstd and
    gamma read, dx written."""
    import torch

    from ascendc_ops.harness.bench import ops as B

    x, g = torch.zeros(6, 10, dtype=torch.bfloat16), torch.zeros(10, dtype=torch.bfloat16)
    xb, gb, rb = 120, 20, 24
    # (read, written): the model's roofline charges them apart (pipeline/estimate.py least_work)
    assert B.OPS["rms_norm"].bytes_moved((x, g), None, "fwd") == (xb + gb, xb + rb)
    assert B.OPS["add_rms_norm"].bytes_moved((x, x, g), None, "fwd") == (2 * xb + gb, 2 * xb + rb)
    assert B.OPS["rms_norm"].bytes_moved((x, g), None, "full").total == (2 * xb + gb + rb) + (3 * xb + rb + gb)
    for op in ("rms_norm", "add_rms_norm"):
        ins = (x, g) if op == "rms_norm" else (x, x, g)
        assert B.OPS[op].bytes_moved(ins, None, "bwd") == (2 * xb + rb + gb, xb)
        assert B.OPS[op].preset_shapes(B.PRESETS["qwen2.5-7b"], 4096) == [(4096, 3584)]


@pytest.mark.parametrize(
    "args,pattern",
    [
        (["--op", "nope"], r"invalid choice: 'nope'"),
        (["--shape", "1,2,3"], r"needs 4 positive dims"),
        (["--shape", "1,2,3,5"], r"head_dim\) must be even"),
        (["--shape", "a,b"], r"comma-separated integers"),
        (["--preset", "gpt-5"], r"invalid choice: 'gpt-5'"),
        (["--csv", "/no/such/dir/x.csv"], r"does not exist"),
    ],
)
def test_bench_bad_arguments(capsys, args, pattern):
    try:
        rc = cli.main(["bench", *args])
    except SystemExit as e:  # argparse errors exit from inside parse_args
        rc = e.code
    line = assert_clean_error(rc, capsys.readouterr().err)
    assert re.search(pattern, line), line


def test_bench_csv_with_other_columns_is_refused(tmp_path, capsys):
    other = tmp_path / "old.csv"
    other.write_text("a,b\n1,2\n")
    rc = cli.main(["bench", "--op", "rotary_mul", "--shape", "1,1,2,8", "--csv", str(other)])
    assert "other columns" in assert_clean_error(rc, capsys.readouterr().err)


def test_repeated_list_options_accumulate():
    """`--op a --op b` means both ops (as `--op a b`), not only the last one given."""
    parser = cli.build_parser()
    args = parser.parse_args(["verify", "--op", "swiglu", "--op", "rms_norm", "--dtype", "float32"])
    assert args.op == ["swiglu", "rms_norm"] and args.dtype == ["float32"]
    args = parser.parse_args(["bench", "--op", "swiglu", "--op", "rms_norm", "rope_customer"])
    assert args.op == ["swiglu", "rms_norm", "rope_customer"]
