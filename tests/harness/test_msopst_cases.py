"""Our case files against msOpST's own case parser (Ascend/msopgen tools/msopst, ASCENDC_MSOPGEN).

Each case of cases/*/*.json goes alone through msOpST's CaseDesign (the parser `msopst run` uses) and
through ours (harness/verify/cases.py). Where msOpST accepts a case, the sub-case lists must agree: count,
and per sub-case in order the inputs' shapes and dtypes, the outputs' shapes and the attrs (names
differ by design: msOpST writes <case>_case_001_ND_float16 / <case>_sub_case_001_..., we write
<case>#k). Where msOpST rejects a case, the reason must be one of our documented extensions
(docs/harness.md, "Beyond msOpST"); a case that msOpST rejects for another reason fails here.
Skipped without a checkout of msopgen."""

import contextlib
import io
import json
import os
import re
import shutil
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]
MSOPGEN = os.environ.get("ASCENDC_MSOPGEN")
pytestmark = pytest.mark.skipif(not MSOPGEN, reason="ASCENDC_MSOPGEN not set (no msopgen checkout here)")
CASE_FILES = sorted((ROOT / "cases").glob("*/*.json"))
# msOpST's error messages for the fields we extend (docs/harness.md "Beyond msOpST").
EXTENSIONS = {
    "value generator": r'"value" field .* is specified, each of the rest fields'
    r'|The file "\w+" is invalid, only supports \.bin',
    "fuzz without shapes": r'There is no key "shape" for "input_desc"',
    "distribution msOpST lacks": r"Only supports \['uniform', 'normal'",
    "one value shared by every sub-case": r'The number of "\w+" of the inputs must be consistent'
    r"|The length of input is inconsistent",
    "several values of an attribute": r'The value \(.*\) is invalid\. The value of "\w+" for "attr" only',
}


def msopst_parse(path: Path):
    sys.path.insert(0, str(Path(MSOPGEN) / "tools"))
    from msopst.st.interface import st_report, utils
    from msopst.st.interface.case_design import CaseDesign

    out = io.StringIO()
    try:
        with contextlib.redirect_stdout(out):
            cases, _ = CaseDesign(str(path), "all", st_report.OpSTReport()).design()
        return cases, None
    except utils.OpTestGenException:
        errors = [line for line in out.getvalue().splitlines() if "[ERROR]" in line]
        return None, errors[-1] if errors else out.getvalue()


def dtype(t):
    return {"float": "float32"}.get(t, t)


@pytest.mark.parametrize("case_file", CASE_FILES, ids=[p.stem for p in CASE_FILES])
def test_case_file_means_what_msopst_says(case_file, tmp_path):
    from ascendc_ops.harness.verify import cases as C, suite as V

    for raw in json.loads(case_file.read_text()):
        single = single_case_file(raw, tmp_path)
        theirs, error = msopst_parse(single)
        if theirs is None:
            assert any(re.search(p, error) for p in EXTENSIONS.values()), f"{raw['case_name']}: {error}"
            continue
        ours = C.load_file(single, V.OPS)
        assert len(ours) == len(theirs), raw["case_name"]
        for o, t in zip(ours, theirs, strict=True):
            assert o.msopst_name == t["case_name"]
            assert [(list(i.shape), i.dtype) for i in o.inputs] == [
                (list(i["shape"]), dtype(i["type"])) for i in t["input_desc"]
            ], o.name
            data = [(list(i.value_range), i.distribution) for i in o.inputs if i.value is None]
            assert data == [(i["value_range"], i["data_distribute"]) for i in t["input_desc"] if "value" not in i]
            assert [list(x.shape) if x.shape else None for x in o.outputs] == [
                list(x["shape"]) for x in t["output_desc"]
            ], o.name
            assert {a["name"]: a["value"] for a in t.get("attr", [])}.items() <= o.attrs.items(), o.name
            golden = t.get("calc_expect_func_file_func")
            assert (o.golden.__name__ if o.golden else None) == golden, o.name
            if golden:  # msOpST keeps error_threshold only beside an expected-data function (else no compare)
                assert o.error_threshold == (tuple(t["error_threshold"]) if "error_threshold" in t else None)


def test_accepted_count():
    """How many cases of cases/ msOpST accepts (docs/harness.md, "Beyond msOpST", states the number)."""
    accepted = total = 0
    for case_file in CASE_FILES:
        for raw in json.loads(case_file.read_text()):
            total += 1
            accepted += msopst_parse_one(raw)[0] is not None
    doc = (ROOT / "docs/harness.md").read_text()
    assert f"today {accepted} of the {total} in" in doc, (accepted, total)


def msopst_parse_one(raw):
    import tempfile

    with tempfile.TemporaryDirectory() as d:
        return msopst_parse(single_case_file(raw, Path(d)))


def single_case_file(raw, where: Path) -> Path:
    """One case alone in a file of its own, beside copies of the files it names (golden, .bin data)."""
    named = [raw.get("calc_expect_func_file", "").split(":")[0]]
    named += [d["value"] for d in raw["input_desc"] if isinstance(d.get("value"), str)]
    for name in named:
        for source in (ROOT / "cases").glob(f"*/{name}") if name else ():
            shutil.copy(source, where / name)
    single = where / f"{raw['case_name']}.json"
    single.write_text(json.dumps([raw]))
    return single


def test_error_threshold_rule_agrees_with_msopst():
    """Our error_threshold verdict equals msOpST's CompareData's on outputs from exact to far off (finite data:
    NaN/Inf is where we are deliberately stricter)."""
    sys.path.insert(0, str(Path(MSOPGEN) / "tools"))
    from msopst.st.interface.compare_data import CompareData

    from ascendc_ops.harness.verify.error_threshold import check_error_threshold, round_to

    rng = np.random.default_rng(7)
    verdicts = set()
    for dtype, np_type in (("float16", np.float16), ("float32", np.float32)):
        for scale in (0.0, 1e-4, 3e-3, 1e-2, 3e-2, 0.2):
            for thr in ((0.001, 0.001), (0.01, 0.05), (0.005, 0.2)):
                g = rng.uniform(-2, 2, 4000) * rng.choice((1.0, 1e-3), 4000)
                a = g * (1 + scale * rng.standard_normal(g.size) * (rng.random(g.size) < 0.1))
                theirs = _quiet(
                    CompareData({}, list(thr), "false", "").compare,
                    a.astype(np_type),
                    round_to(g, dtype).astype(np_type),
                )
                ours = check_error_threshold(a.astype(np_type), g, dtype, thr).passed
                assert ours == (theirs[0] == "Pass"), (dtype, scale, thr)
                verdicts.add(ours)
    assert verdicts == {True, False}  # both verdicts met: the comparison can fail


def test_value_range_per_distribution_agrees_with_msopst():
    """The same value_range gives data of the same law as msOpST's DataGenerator (mean and spread)."""
    sys.path.insert(0, str(Path(MSOPGEN) / "tools"))
    from msopst.st.interface.data_generator import DataGenerator

    from ascendc_ops.harness.values import from_distribution

    rng = np.random.default_rng(3)
    np.random.seed(3)
    for dist, lo, hi in (("uniform", -3, 1), ("normal", 2, 0.5), ("laplace", -1, 2), ("beta", 2, 5), ("tanh", -2, 2)):
        ours = from_distribution(dist, lo, hi, rng, (200_000,))
        theirs = _quiet(DataGenerator.gen_data, (200_000,), lo, hi, "float32", dist).astype(np.float64)
        assert ours.mean() == pytest.approx(theirs.mean(), abs=0.02), dist
        assert ours.std() == pytest.approx(theirs.std(), rel=0.02), dist


def _quiet(fn, *args):
    with contextlib.redirect_stdout(io.StringIO()):
        return fn(*args)
