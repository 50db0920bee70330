"""A modelled chip: the values of one platform file (harness/platforms/*.json), each with its source."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field, replace
from pathlib import Path

from ...dtypes import BYTES, canonical

PLATFORM_DIR = Path(__file__).resolve().parent.parent / "platforms"
PIPES = ("S", "V", "MTE2", "MTE3", "MTE1", "M", "FIX")
GM_PIPES = ("MTE2", "MTE3", "FIX")  # the pipes whose bytes come from or go to GM (HBM shares them)
FRACTAL = 16  # a cube fractal is 16 rows x 32 bytes of K x 16 columns (M0 = N0 = 16)
FRACTAL_K_BYTES = 32


def platform_files() -> dict[str, Path]:
    """Every name and alias a platform file answers to -> the file."""
    names = {}
    for path in sorted(PLATFORM_DIR.glob("*.json")):
        raw = json.loads(path.read_text())
        for n in [raw["name"], path.stem, *raw.get("aliases", [])]:
            names[n.lower()] = path
    return names


@dataclass(frozen=True)
class Platform:
    name: str
    clock_mhz: float
    vector_cores: int
    cube_cores: int
    ub_bytes: int
    hbm_bytes_per_s: float
    rates: dict  # bytes per cycle of each data path ("GM->UB", "GM->L1", "L1->L0A", ...)
    latency: dict  # completion latency of each data-moving pipe, cycles
    costs: dict  # the remaining scalar parameters (setup, issue, sync, launch, ...)
    vector: dict = field(repr=False)  # op name -> class -> dtype -> (start, per repeat)
    composite: dict = field(repr=False)  # activation API -> the vector ops it expands to
    sources: dict = field(repr=False)  # parameter -> its source text
    lacks: dict = field(default_factory=dict, repr=False)  # recorded API the chip does not have -> its doc page
    l2_bytes: int = 0  # the chip's L2 cache (0: none modelled)
    l2_bytes_per_cycle: float = 0.0  # L2 bandwidth per AI core (an AIC and its AIVs)
    l2_warm: bool = False  # the previous identical launch left what fits in L2 resident (pipeline/l2.py)

    @property
    def hz(self) -> float:
        return self.clock_mhz * 1e6

    def launch_us(self, cores_used: int, cube: bool = False) -> float:
        """A kernel's start: the vector or the cube kernels' fixed cost plus a share per core started."""
        base = self.costs.get("cube_launch_us", self.costs["launch_us"]) if cube else self.costs["launch_us"]
        return base + self.costs["launch_us_per_core"] * cores_used

    @property
    def l2_bytes_per_s(self) -> float:
        """The chip's L2 bandwidth: the per-core figure on every AI core (the cube cores count them)."""
        return self.l2_bytes_per_cycle * self.cube_cores * self.hz

    def with_l2_warm(self, warm: bool) -> Platform:
        """The same chip with L2 warm (repeated identical launches) or cold (pipeline/l2.py)."""
        return replace(self, l2_warm=bool(warm))

    def with_hbm(self, bytes_per_s: float) -> Platform:
        """The same chip with another HBM bandwidth (what-if and model sanity checks)."""
        return replace(self, hbm_bytes_per_s=bytes_per_s)

    def with_costs(self, **costs) -> Platform:
        """The same chip with other scalar costs (e.g. launch_us)."""
        return replace(self, costs={**self.costs, **costs})

    def with_values(self, values: dict) -> Platform:
        """The same chip with other parameter values ({platform-file key: value or {"value", "source"}}):
        hbm_bytes_per_s, l2_warm or a scalar cost; a value's source replaces the file's."""
        v = {k: (x["value"] if isinstance(x, dict) else x) for k, x in values.items()}
        hbm = v.pop("hbm_bytes_per_s", self.hbm_bytes_per_s)
        warm = bool(v.pop("l2_warm", self.l2_warm))
        unknown = [k for k in v if k not in self.costs]
        if unknown:
            raise ValueError(f"{self.name}: {', '.join(unknown)}: not a value the model takes from outside")
        src = {k: x["source"] for k, x in values.items() if isinstance(x, dict) and "source" in x}
        return replace(
            self, hbm_bytes_per_s=hbm, l2_warm=warm, costs={**self.costs, **v}, sources={**self.sources, **src}
        )

    def cube_macs_per_cycle(self, dtype: str) -> float:
        """The cube's peak multiply-accumulates per cycle for inputs of `dtype`: one fractal's MACs over
        the cycles a fractal takes."""
        k0 = FRACTAL_K_BYTES // dtype_bytes(dtype)
        return FRACTAL * FRACTAL * k0 / self.costs["cube_fractal_cycles"][dtype_key(dtype)]

    def cube_peak_flops(self, dtype: str) -> float:
        """FLOP/s of every cube core at peak (a MAC is 2 FLOPs)."""
        return 2 * self.cube_macs_per_cycle(dtype) * self.cube_cores * self.hz

    def vector_cycles(self, op: str, dtype_key: str, repeats: int) -> tuple[float, float]:
        """(cycles the V queue is held, completion latency after that) of one vector instruction."""
        cls = self.vector.get(op, self.vector["__default__"])
        start, per = cls.get(dtype_key) or cls.get("float32")
        return per * repeats, start


# data path -> its platform-file key (bytes per cycle per core)
PATH_RATES = {
    "GM->UB": "mte2_bytes_per_cycle",
    "GM->L1": "mte2_l1_bytes_per_cycle",
    "UB->GM": "mte3_bytes_per_cycle",
    "L1->L0A": "mte1_bytes_per_cycle",
    "L1->L0B": "mte1_l0b_bytes_per_cycle",
    "L0C->GM": "fix_bytes_per_cycle",
}


def _value(raw: dict, key: str):
    entry = raw[key]
    return entry["value"] if isinstance(entry, dict) else entry


def load_platform(name: str = "910B", calibrated: bool = False) -> Platform:
    """The platform file named `name` (a file stem, chip name or alias such as 910B / 310P); calibrated:
    with the values fitted to measured times (platforms/calibration/<stem>.json, calibration.py) in place
    of the file's."""
    files = platform_files()
    path = files.get(name.lower())
    if path is None:
        raise ValueError(f"unknown platform {name!r}; known: {', '.join(sorted({p.stem for p in files.values()}))}")
    raw = json.loads(path.read_text())
    sources = {k: v["source"] for k, v in raw.items() if isinstance(v, dict) and "source" in v}
    vec = raw["vector"]
    table = {}
    for cls_name, cls in vec["classes"].items():
        entry = {k: tuple(v) for k, v in cls.items() if k in ("float16", "float32", "int")}
        for op in cls["ops"]:
            table[op] = entry
        if cls_name == "default":
            table["__default__"] = entry
    composite = {k: tuple(v) for k, v in vec.get("composite", {}).items() if isinstance(v, list)}
    costs = {
        k: _value(raw, k)
        for k in (
            "mte_setup_cycles",
            "scalar_issue_cycles",
            "scalar_ub_cycles",
            "scalar_gm_cycles",
            "sync_cycles",
            "pipe_barrier_v_cycles",
            "queue_depth",
            "launch_us",
            "launch_us_per_core",
            "repeat_bytes",
            "cube_fractal_cycles",
            "cube_start_cycles",
        )
    } | {k: _value(raw, k) for k in ("cube_launch_us", "cross_core_latency_cycles") if k in raw}
    plat = Platform(
        name=raw["name"],
        clock_mhz=float(_value(raw, "clock_mhz")),
        vector_cores=int(_value(raw, "vector_cores")),
        cube_cores=int(_value(raw, "cube_cores")),
        ub_bytes=int(_value(raw, "ub_bytes")),
        hbm_bytes_per_s=float(_value(raw, "hbm_bytes_per_s")),
        rates={path: float(_value(raw, key)) for path, key in PATH_RATES.items()},
        latency={
            "MTE2": float(_value(raw, "mte2_latency_cycles")),
            "MTE3": float(_value(raw, "mte3_latency_cycles")),
            "MTE1": 0.0,  # L1 -> L0 stays on the core; no figure is published, none is assumed
            "FIX": float(_value(raw, "fix_latency_cycles")),
        },
        costs=costs,
        vector=table,
        composite=composite,
        sources=sources,
        lacks=dict(_value(raw, "lacks")) if "lacks" in raw else {},
        l2_bytes=int(_value(raw, "l2_bytes")) if "l2_bytes" in raw else 0,
        l2_bytes_per_cycle=float(_value(raw, "l2_bytes_per_cycle")) if "l2_bytes_per_cycle" in raw else 0.0,
        l2_warm=bool(_value(raw, "l2_warm")) if "l2_warm" in raw else False,
    )
    return _calibrated(plat, path) if calibrated else plat


# The harness's estimates (estimate, profile, the ops bench, the cann-bench preset) use the values fitted to
# measured times by default, `--uncalibrated` the platform file's priors (docs/pipeline-model.md says why).
CALIBRATED_BY_DEFAULT = True


def model_platform(name: str = "910B", calibrated: bool = CALIBRATED_BY_DEFAULT) -> Platform:
    """The chip the harness's estimates run on: calibrated when asked and the chip has a calibration (the
    310P has none: its file's values); `is_calibrated` tells which."""
    path = platform_files().get(name.lower())
    has = path is not None and (PLATFORM_DIR / "calibration" / path.name).exists()
    return load_platform(name, calibrated and has)


def is_calibrated(plat: Platform) -> bool:
    return "fitted" in plat.sources.get("launch_us", "")


def _calibrated(plat: Platform, path: Path) -> Platform:
    cal_path = PLATFORM_DIR / "calibration" / path.name
    if not cal_path.exists():
        raise ValueError(f"{plat.name}: no calibration ({cal_path.name} not in {cal_path.parent})")
    return plat.with_values(json.loads(cal_path.read_text())["values"])


def dtype_bytes(dtype: str) -> int:
    """Element size of a recorded dtype; a conversion 'a->b' (or 'a,b') counts its wider side."""
    parts = [p.strip() for p in dtype.replace("->", ",").split(",") if p.strip()] or ["float"]
    return max(BYTES.get(canonical(p), 4) for p in parts)


def dtype_key(dtype: str) -> str:
    """The cost-table column of a recorded dtype: float16 (2-byte floats), float32, or int."""
    names = [canonical(p.strip()) for p in dtype.replace("->", ",").split(",") if p.strip()]
    if "float32" in names:
        return "float32"
    if "float16" in names or "bfloat16" in names:
        return "float16"
    return "int" if names else "float32"


def repeats_of(count: int, dtype: str, repeat_bytes: int = 256) -> int:
    return max(1, math.ceil(count * dtype_bytes(dtype) / repeat_bytes)) if count else 0
