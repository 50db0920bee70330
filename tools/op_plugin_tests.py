#!/usr/bin/env python3
"""Runs Ascend/op-plugin's own tests for the torch_npu names ascendc_ops.npu provides, from a checkout, on CPU.

    .venv/bin/python tools/op_plugin_tests.py /path/to/op-plugin [--rev HEAD] [--device cpu|sim] [-k EXPR] [--unskip]

The checkout may be a work tree or a bare git directory; nothing of it is copied into this repository. The test
files are those under test/test_custom_ops/ that call a name of ascendc_ops.npu.PROVIDED (read at run time, so
names added later are picked up); they are written from ``git show <rev>:<path>`` to a temporary directory and
run by pytest with tools/op_plugin_shim.py standing in for torch_npu. Every case is then one of:

- pass;
- out of scope: skipped by op-plugin itself (unittest.skip), run by op-plugin only on another SoC
  (SupportedDevices), or stopped by what ascendc_ops.npu refuses by design (NotImplementedError: quantized
  or fused-activation variants, the rotate matrix, dropout; AttributeError: a torch_npu name it does not provide,
  or a device-module call the shim does not stand in for: the NPU generator, graphs, compile modes);
- fail: anything else.

Prints a table per file and the counts; ``--json`` writes every case; exit status 1 if any case fails.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET
from pathlib import Path

TOOLS = Path(__file__).resolve().parent
TEST_DIR = "test/test_custom_ops"
# what ascendc_ops.npu raises for what it refuses by design (npu/: _QUANT_ARGS, act_type, rotate, __getattr__)
OUT_OF_SCOPE = (
    re.compile(r"NotImplementedError: (npu_\w+: .*)"),
    re.compile(r"AttributeError: (ascendc_ops\.npu \(standing in for torch_npu\) has no '\w+')"),
    re.compile(r"AttributeError: (torch_npu\.npu \(the shim's device module\) has no '\w+')"),
)
# op-plugin names its fusion-attention tests after the kernel: test_npu_flash_attention_grad_v2.py
FILE_ALIASES = (("fusion_attention", "flash_attention"),)


def git(checkout: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(checkout), *args], check=True, capture_output=True, text=True).stdout


def provided() -> list[str]:
    sys.path.insert(0, str(TOOLS.parent / "python"))
    import ascendc_ops.npu as npu

    return list(npu.PROVIDED)


def test_files(checkout: Path, rev: str, names: list[str]) -> list[str]:
    """Files of TEST_DIR that test a name: they call torch_npu.<name>( (or import it from torch_npu) and are named
    after it, underscores aside (test_npu_swi_glu_backward.py for npu_swiglu); files of other ops that use one of
    ours only for their golden (test_alltoallv_gmm.py) are not ours to pass."""
    found = set()
    for name in names:
        pattern = rf"torch_npu\.{name}\(|from torch_npu import .*\b{name}\b"
        try:
            out = git(checkout, "grep", "-l", "-E", pattern, rev, "--", TEST_DIR)
        except subprocess.CalledProcessError:  # no match
            continue
        stems = {"test" + n.replace("_", "") for n in [name, *(name.replace(a, b) for a, b in FILE_ALIASES)]}
        for path in (line.split(":", 1)[1] for line in out.splitlines() if line):
            if any(Path(path).stem.replace("_", "").startswith(stem) for stem in stems):
                found.add(path)
    return sorted(found)


def outcome(case: ET.Element) -> tuple[str, str]:
    for tag in ("failure", "error"):
        node = case.find(tag)
        if node is not None:
            text = (node.get("message") or "") + "\n" + (node.text or "")
            for rule in OUT_OF_SCOPE:
                m = rule.search(text)
                if m:
                    return "out of scope", m.group(1)
            first = (node.get("message") or text.strip()).splitlines()
            return "fail", first[0][:200] if first else tag
    node = case.find("skipped")
    if node is not None:
        return "out of scope", (node.get("message") or "skipped").splitlines()[0][:200]
    return "pass", ""


def run(
    checkout: Path, rev: str, device: str, select: str | None, files: list[str] | None, unskip: bool = False
) -> list[dict]:
    names = provided()
    files = files or test_files(checkout, rev, names)
    if not files:
        raise SystemExit(f"no test file under {TEST_DIR} calls any of {names} at {rev} in {checkout}")
    with tempfile.TemporaryDirectory(prefix="op_plugin_") as tmp:
        for f in files:
            dst = Path(tmp, f)
            dst.parent.mkdir(parents=True, exist_ok=True)
            dst.write_text(git(checkout, "show", f"{rev}:{f}"))
        report = Path(tmp, "report.xml")
        env = dict(os.environ, ASCENDC_OPP_DEVICE=device, ASCENDC_OPP_UNSKIP="1" if unskip else "0")
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(TOOLS), env.get("PYTHONPATH")]))
        cmd = [sys.executable, "-m", "pytest", "-p", "op_plugin_shim", "-p", "no:cacheprovider", "-q", "-rs"]
        cmd += ["--continue-on-collection-errors"]
        cmd += ["-c", os.devnull, "--rootdir", tmp, f"--junitxml={report}", "-o", "junit_family=xunit1"]
        cmd += ["-k", select] if select else []
        subprocess.run(cmd + files, cwd=tmp, env=env, check=False)
        root = ET.parse(report).getroot()
        cases = []
        for case in root.iter("testcase"):
            status, why = outcome(case)
            file = case.get("file") or case.get("classname", "").replace(".", "/")
            cases.append(
                {"file": file, "case": f"{case.get('classname')}::{case.get('name')}", "status": status, "why": why}
            )
        return cases


STATUSES = ("pass", "fail", "out of scope")


def table(cases: list[dict], rev_id: str) -> str:
    """Every case, then the counts per file and in all."""
    lines = [f"op-plugin {rev_id}", "", "| status | case | reason |", "|---|---|---|"]
    lines += [f"| {c['status']} | {c['case']} | {c['why']} |" for c in sorted(cases, key=lambda c: c["case"])]
    lines += ["", "| file | " + " | ".join(STATUSES) + " |", "|---" * (len(STATUSES) + 1) + "|"]
    files = sorted({c["case"].split("::")[0].rsplit(".", 1)[0] for c in cases})
    for f in files + ["all"]:
        mine = [c for c in cases if f == "all" or c["case"].split("::")[0].rsplit(".", 1)[0] == f]
        lines.append(
            f"| {f.rsplit('.', 1)[-1]} | "
            + " | ".join(str(sum(c["status"] == s for c in mine)) for s in STATUSES)
            + " |"
        )
    return "\n".join(lines)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("checkout", nargs="?", default=os.environ.get("ASCENDC_OPS_OP_PLUGIN"), help="op-plugin checkout")
    p.add_argument("--rev", default="HEAD")
    p.add_argument("--device", choices=("cpu", "sim"), default="cpu")
    p.add_argument("-k", dest="select", help="pytest -k expression")
    p.add_argument("--file", action="append", dest="files", help=f"a file under {TEST_DIR} (default: found)")
    p.add_argument("--json", type=Path, help="write every case here")
    p.add_argument("--unskip", action="store_true", help="also run what op-plugin skips or runs on other SoCs only")
    a = p.parse_args(argv)
    if not a.checkout:
        p.error("give the op-plugin checkout (or set ASCENDC_OPS_OP_PLUGIN)")
    checkout = Path(a.checkout)
    rev_id = git(checkout, "rev-parse", a.rev).strip()
    cases = run(checkout, a.rev, a.device, a.select, a.files, a.unskip)
    print(table(cases, rev_id))
    if a.json:
        a.json.write_text(json.dumps({"commit": rev_id, "device": a.device, "cases": cases}, indent=1))
    return int(any(c["status"] == "fail" for c in cases))


if __name__ == "__main__":
    sys.exit(main())
