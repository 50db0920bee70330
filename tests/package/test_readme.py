"""The README's Python runs verbatim: every ```python block, in order, in one namespace (the "Use"
blocks build on each other), in a subprocess (a block imports torch_npu, and the simulated NPU that
stands in for it renames torch's PrivateUse1 device for good). A block that imports torch_npu runs on
the simulated NPU with ascendc_ops.npu as torch_npu, the README's own stand-in."""

import json
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"

RUNNER = r"""
import json, sys, traceback
blocks = json.loads(sys.stdin.read())
namespace = {"__name__": "__readme__"}
for line, code in blocks:
    if "torch_npu" in code and "torch_npu" not in sys.modules:
        import ascendc_ops, ascendc_ops.testing
        ascendc_ops.testing.simulated_npu()
        sys.modules["torch_npu"] = ascendc_ops.npu
    try:
        exec(compile(code, f"README.md:{line}", "exec"), namespace)
    except BaseException:
        traceback.print_exc()
        sys.exit(f"README.md block at line {line} failed")
    print("ran README.md block at line", line, flush=True)
"""


def python_blocks(text: str) -> list[tuple[int, str]]:
    """(line of the opening fence, code) for every ```python block."""
    return [
        (text.count("\n", 0, m.start()) + 1, m.group(1))
        for m in re.finditer(r"^```python\n(.*?)^```$", text, re.M | re.S)
    ]


def test_the_extractor_sees_every_python_fence():
    text = README.read_text()
    assert len(python_blocks(text)) == text.count("```python") >= 5


def test_every_python_block_runs():
    blocks = python_blocks(README.read_text())
    result = subprocess.run(
        [sys.executable, "-c", RUNNER], input=json.dumps(blocks), capture_output=True, text=True, timeout=900, cwd=ROOT
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.count("ran README.md block") == len(blocks), result.stdout
