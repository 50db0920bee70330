"""cann-bench's facts (hicann/cann-bench): its cases (tasks/<level>/<task>/cases.yaml) and the built-in kernels'
times on Ascend 910B2 (tasks/metadata/910b2.json), read from a checkout (a work tree or a bare git dir) or from
our snapshot of them (data/cann_bench_910b2.json, written by tools/cann_bench_import.py); and its score, HAP.

Every fact keeps its source: repository, commit and file. Non-finite numbers (value_range [-inf, inf],
[nan, nan]) are stored in JSON as the strings "inf", "-inf", "nan".
"""

from __future__ import annotations

import json
import math
import subprocess
from pathlib import Path

from ..pipeline.calibration import ATTENTION_TASKS, FLOOR_TASKS

REPOSITORY = "https://github.com/hicann/cann-bench"
HARDWARE = "910b2"
METADATA_FILE = f"tasks/metadata/{HARDWARE}.json"
DATA_FILE = Path(__file__).resolve().parent.parent / "data" / f"cann_bench_{HARDWARE}.json"
# The tasks one of our ops implements or is planned to; their level is found in the checkout. The attention
# tasks and the floor tasks (snapshot key "floor_tasks") are the pipeline model's (pipeline/calibration.py).
TASKS = ("rms_norm", "swi_glu", "apply_rotary_pos_emb", "grouped_matmul", *ATTENTION_TASKS, "cross_entropy_loss",
         "linear_cross_entropy")  # fmt: skip
# Where a task lives: cann-bench's main set (tasks/<level>/<task>/), else its kernel_bench lab
# (bench_lab/kernel_bench/<level>/<task>/: spec-only tasks such as linear_cross_entropy), else a lab without levels
# (FLAT_SETS: <set>/<task>/, its times keyed by task), each set with its own times file (<set>/metadata/910b2.json).
TASK_SETS = ("tasks", "bench_lab/kernel_bench", "bench_lab/tilelang_ascend_bench", "bench_lab/omni-ops_bench")
FLAT_SETS = ("bench_lab/tilelang_ascend_bench", "bench_lab/omni-ops_bench")
# The tasks the preset runs outside the model check (snapshot key "preset_tasks"): the model check
# (pipeline/calibration.py) has no least work for them, the preset prices it (cann_bench/work.py). Each in the set
# named, as a task name can repeat across sets (tilelang's flash_attention is not cv_agent_fa_bench's).
PRESET_TASKS = {
    "apply_adam_w": "tasks",
    "foreach_norm": "tasks",
    "flash_attention": "bench_lab/tilelang_ascend_bench",
    "flash_attention_backward": "bench_lab/kernel_bench",
    "flash_attention_score_grad_enhance": "bench_lab/omni-ops_bench",
}
# Where cann-bench defines HAP and the capped baseline (cited, not copied).
HAP_SOURCE = ("README.md", "src/kernel_eval/benches/cann_scoring.py")
CAP_SOURCE = f"{METADATA_FILE} (_metadata.baseline_source)"
# The published times are given to 0.01 us: a baseline this close to the cap is the cap.
CAP_TOLERANCE_US = 0.01
PRECAP_KIND = "measured before the cap"  # a capped case's measurement from the times file's history


# ---------------------------------------------------------------- the score and the cap (cann-bench's rules)
def cap_us(t_hw_us: float) -> float:
    """The published ceiling of a baseline, and the stand-in where nothing was measured: max(10 * t_hw, 10 us)."""
    return max(10.0 * t_hw_us, 10.0)


def baseline_kind(baseline_us: float, t_hw_us: float) -> str:
    """'measured', or 'cap' when the published baseline is the cap: published = min(measured, cap), and
    cases never measured got the cap, so a value equal to the cap is no measurement."""
    return "cap" if abs(baseline_us - cap_us(t_hw_us)) < CAP_TOLERANCE_US else "measured"


def hap(t_baseline_us: float, t_cand_us: float, t_hw_us: float) -> float | None:
    """cann-bench's per-case score, HAP (hardware-anchored performance; README.md, cann_scoring.py
    per_case_sol_score): (T_base - T_hw) / ((T_cand - T_hw) + (T_base - T_hw)). 0.5 at the baseline's time,
    1 at T_hw, above 1 faster than T_hw; None when T_cand or T_hw is not positive or the denominator is not;
    a missing baseline (not positive) is replaced by the cap."""
    bad = [v for v in (t_cand_us, t_hw_us) if v is None or math.isnan(v) or v <= 0]
    if bad:
        return None
    if t_baseline_us is None or math.isnan(t_baseline_us) or t_baseline_us <= 0:
        t_baseline_us = cap_us(t_hw_us)
    denom = (t_cand_us - t_hw_us) + (t_baseline_us - t_hw_us)
    return (t_baseline_us - t_hw_us) / denom if denom > 0 else None


# ---------------------------------------------------------------- JSON numbers
def encode(v):
    """JSON has no inf/nan: write them as strings."""
    if isinstance(v, float) and not math.isfinite(v):
        return "nan" if math.isnan(v) else ("inf" if v > 0 else "-inf")
    if isinstance(v, dict):
        return {k: encode(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [encode(x) for x in v]
    return v


def decode(v):
    if v in ("inf", "-inf", "nan"):
        return float(v)
    if isinstance(v, dict):
        return {k: decode(x) for k, x in v.items()}
    if isinstance(v, list):
        return [decode(x) for x in v]
    return v


# ---------------------------------------------------------------- reading a checkout
class Checkout:
    """A cann-bench checkout: a work tree (DIR/tasks/...) or a git dir (bare or DIR/.git), read at HEAD."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        work = (self.path / "tasks").is_dir()
        self.git_dir = None if work else self.path
        if not work and not self._git("rev-parse", "--git-dir", check=False):
            raise ValueError(f"{path}: neither a cann-bench work tree (no tasks/) nor a git dir")
        head = self._git("rev-parse", "HEAD", check=False)
        self.commit = head.strip() if head else "unknown (not a git checkout)"
        date = self._git("log", "-1", "--format=%cI", check=False)
        self.commit_date = date.strip() if date else None

    def _git(self, *args, check=True) -> str | None:
        where = ["--git-dir", str(self.git_dir)] if self.git_dir else ["-C", str(self.path)]
        r = subprocess.run(["git", *where, *args], capture_output=True, text=True)
        if r.returncode:
            if check:
                raise ValueError(f"{self.path}: git {' '.join(args)}: {r.stderr.strip()}")
            return None
        return r.stdout

    def files(self) -> list[str]:
        if self.git_dir:
            return self._git("ls-tree", "-r", "--name-only", "HEAD", *TASK_SETS).split()
        roots = [self.path / root for root in TASK_SETS if (self.path / root).is_dir()]
        return [str(p.relative_to(self.path)) for root in roots for p in root.rglob("*") if p.is_file()]

    def read(self, rel: str) -> str:
        if self.git_dir:
            return self._git("show", f"HEAD:{rel}")
        return (self.path / rel).read_text()


def _yaml(text: str, where: str):
    try:
        import yaml
    except ImportError:
        raise ValueError(f"reading {where} needs PyYAML: pip install pyyaml") from None
    return yaml.safe_load(text)


def import_checkout(path: str | Path) -> dict:
    """Our snapshot of the tasks in TASKS (and FLOOR_TASKS, under "floor_tasks") from a checkout: per task its
    files, per case its fields from cases.yaml and its times from the metadata file, the baseline marked
    measured or cap."""
    co = Checkout(path)
    files = co.files()
    meta = json.loads(co.read(METADATA_FILE))
    metas = (
        {"tasks": meta}
        | {  # each set's times; a set without a times file has none
            root: json.loads(co.read(times_file(root))) for root in TASK_SETS[1:] if times_file(root) in files
        }
    )
    doc = {
        "source": {
            "repository": REPOSITORY,
            "commit": co.commit,
            "commit_date": co.commit_date,
            "hardware": HARDWARE,
            "times_file": METADATA_FILE,
            "times_method": meta.get("_metadata", {}).get("baseline_source", {}),
            "hap_defined_in": list(HAP_SOURCE),
            "cap_rule": f"published = min(measured, max(10 * t_hw_us, 10 us)); unmeasured = the cap ({CAP_SOURCE})",
        },
    }
    history = _History(co)
    doc["tasks"] = {task: _task(co, files, metas, task, path, history) for task in TASKS}
    doc["floor_tasks"] = {task: _task(co, files, metas, task, path, history) for task in FLOOR_TASKS}
    doc["preset_tasks"] = {
        task: _task(co, files, metas, task, path, history, (root,)) for task, root in PRESET_TASKS.items()
    }
    return doc


def all_tasks(facts: dict) -> dict:
    """Every task the preset runs: the model check's ("tasks") and the preset's own ("preset_tasks")."""
    return facts["tasks"] | facts.get("preset_tasks", {})


class _History:
    """The revisions of each times file, newest first (git log), read when asked: where the published baseline
    is the cap, the last revision that held a larger value holds the measurement the cap replaced (cann-bench's
    dd6486f, "unify 910b2 baseline to 10x t_hw", capped 416 measured cases). A work tree without git has none."""

    def __init__(self, co: Checkout):
        self.co, self.revs, self.docs = co, {}, {}

    def _revisions(self, rel: str) -> list[str]:
        if rel not in self.revs:
            log = self.co._git("log", "--format=%H", "HEAD", "--", rel, check=False)
            self.revs[rel] = log.split() if log else []
        return self.revs[rel]

    def _doc(self, rev: str, rel: str) -> dict:
        if (rev, rel) not in self.docs:
            text = self.co._git("show", f"{rev}:{rel}", check=False)
            self.docs[(rev, rel)] = json.loads(text) if text else {}
        return self.docs[(rev, rel)]

    def precap(self, rel: str, keys: tuple, t_hw_us: float) -> dict | None:
        """{us, read_at, capped_by} of the newest measurement above the cap of the case at `keys` in `rel`'s
        history, with the same t_hw (the cap's anchor), or None."""
        revs = self._revisions(rel)
        for newer, rev in zip(revs, revs[1:], strict=False):  # rev: the parent side of `newer`'s change
            t = self._doc(rev, rel)
            for k in keys:
                t = t.get(k, {}) if isinstance(t, dict) else {}
            us, hw = t.get("baseline_perf_us"), t.get("t_hw_us")
            if us is not None and hw == t_hw_us and us > cap_us(t_hw_us) + CAP_TOLERANCE_US:
                return {"us": us, "read_at": rev, "capped_by": newer}
        return None


def times_file(root: str) -> str:
    return f"{root}/metadata/{HARDWARE}.json"


def _find(files: list[str], task: str, roots=TASK_SETS) -> tuple[str, str] | None:
    """(set, cases file) of `task`: <set>/[<level>/]<task>/cases.yaml in the first of `roots` that has it."""
    for root in roots:
        depth = root.count("/") + (2 if root in FLAT_SETS else 3)
        found = [f for f in files if f.startswith(f"{root}/") and f.endswith(f"/{task}/cases.yaml")]
        found = [f for f in found if f.count("/") == depth]
        if found:
            return root, found[0]
    return None


def _task(co: Checkout, files: list[str], metas: dict, task: str, path, history: _History, roots=TASK_SETS) -> dict:
    """One task of the checkout: its files, operator, schema and cases with their times (a capped baseline with
    the measurement before the cap, when the times file's history holds one)."""
    where = _find(files, task, roots)
    if where is None:
        raise ValueError(f"{path}: no <set>/[<level>/]{task}/cases.yaml (sets: {', '.join(roots)}) at {co.commit}")
    root, cases_file = where
    level = None if root in FLAT_SETS else cases_file.split("/")[root.count("/") + 1]
    base = cases_file.rsplit("/", 1)[0]
    proto = _yaml(co.read(f"{base}/proto.yaml"), f"{base}/proto.yaml")["operator"]
    keys = (task,) if level is None else (level, task)
    times = metas.get(root, {})
    for k in keys:
        times = times.get(k, {})
    cases = []
    for raw in _yaml(co.read(cases_file), cases_file)["cases"]:
        t = times.get(str(raw["case_id"]), {})
        case = {k: raw.get(k) for k in ("case_id", "input_shape", "dtype", "attrs", "value_range", "note")} | {
            "baseline_perf_us": t.get("baseline_perf_us"),
            "t_hw_us": t.get("t_hw_us"),
        }
        if case["baseline_perf_us"] is not None and case["t_hw_us"] is not None:
            case["baseline_kind"] = baseline_kind(case["baseline_perf_us"], case["t_hw_us"])
        else:
            case["baseline_kind"] = "missing"
        if case["baseline_kind"] == "cap":
            pre = history.precap(times_file(root), (*keys, str(raw["case_id"])), case["t_hw_us"])
            if pre:
                case["precap"] = {"kind": PRECAP_KIND, **pre}
        cases.append(case)
    return {
        "operator": proto["name"],
        "level": level,
        "set": root,
        "schema": proto.get("schema"),
        "files": {
            "cases": cases_file,
            "proto": f"{base}/proto.yaml",
            "desc": f"{base}/desc.md",
            "golden": f"{base}/golden.py",
            "times": times_file(root),
        },
        "cases": cases,
    }


def load(checkout: str | Path | None = None) -> dict:
    """The facts: read from `checkout` when given, else our snapshot (non-finite numbers decoded)."""
    if checkout:
        return import_checkout(checkout)
    return decode(json.loads(DATA_FILE.read_text()))
