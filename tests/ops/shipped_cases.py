"""`ascendc-ops verify` over the shipped case files (cases/<family>/*.json), in-process through the CLI's
main (the CLI's code path without an interpreter start-up)."""

from __future__ import annotations

import json
from pathlib import Path

from ascendc_ops import __main__ as cli

CASES = Path(__file__).resolve().parents[2] / "cases"


def verify_shipped(tmp_path: Path, capsys, *files: str) -> list[dict]:
    """The result records of `verify --cases` over cases/<file>...; fails the test on a non-zero exit."""
    out = tmp_path / "v.json"
    rc = cli.main(["verify", "--cases", *(str(CASES / f) for f in files), "--json", str(out), "--no-progress"])
    captured = capsys.readouterr()
    assert rc == 0, captured.out[-3000:] + captured.err
    return json.loads(out.read_text())["results"]
