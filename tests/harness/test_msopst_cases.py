"""Our case files against msOpST's own case parser (Ascend/msopgen tools/msopst, ASCENDC_MSOPGEN).

Each case of cases/*.json goes alone through msOpST's CaseDesign (the parser `msopst run` uses) and
through ours (harness/cases.py). Where msOpST accepts a case, the sub-case lists must agree: count,
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
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
MSOPGEN = os.environ.get("ASCENDC_MSOPGEN")
pytestmark = pytest.mark.skipif(not MSOPGEN, reason="ASCENDC_MSOPGEN not set (no msopgen checkout here)")
CASE_FILES = sorted((ROOT / "cases").glob("*.json"))
# msOpST's error messages for the fields we extend (docs/harness.md "Beyond msOpST").
EXTENSIONS = {
    "value generator": r'"value" field .* is specified, each of the rest fields'
    r'|The file "\w+" is invalid, only supports \.bin',
    "fuzz without shapes": r'There is no key "shape" for "input_desc"',
    "distribution msOpST lacks": r"Only supports \['uniform', 'normal'",
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
    from ascendc_ops.harness import cases as C, verify as V

    for raw in json.loads(case_file.read_text()):
        single = tmp_path / f"{raw['case_name']}.json"
        single.write_text(json.dumps([raw]))
        theirs, error = msopst_parse(single)
        if theirs is None:
            assert any(re.search(p, error) for p in EXTENSIONS.values()), f"{raw['case_name']}: {error}"
            continue
        ours = C.load_file(single, V.OPS)
        assert len(ours) == len(theirs), raw["case_name"]
        for o, t in zip(ours, theirs, strict=True):
            assert [(list(i.shape), i.dtype) for i in o.inputs] == [
                (list(i["shape"]), dtype(i["type"])) for i in t["input_desc"]
            ], o.name
            assert [list(x.shape) if x.shape else None for x in o.outputs] == [
                list(x["shape"]) for x in t["output_desc"]
            ], o.name
            assert {a["name"]: a["value"] for a in t.get("attr", [])}.items() <= o.attrs.items(), o.name
