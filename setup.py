"""Builds ascendc_ops: CMake compiles the CPU twin, the kernels and the torch bindings into
python/ascendc_ops/_C.so (plus the NPU backend where CANN and torch_npu exist)."""
import os
import shutil
import subprocess
import sys
from pathlib import Path

from setuptools import Extension, find_packages, setup
from setuptools.command.build_ext import build_ext
from setuptools.command.build_py import build_py

ROOT = Path(__file__).resolve().parent
BUILD = ROOT / "build"
LIBRARY = ROOT / "python" / "ascendc_ops" / "_C.so"


class CMakeBuild(build_ext):
    def get_ext_filename(self, ext_name):
        return os.path.join(*ext_name.split(".")) + ".so"  # torch.ops.load_library wants a plain name

    def run(self):
        BUILD.mkdir(exist_ok=True)
        # ASCENDC_OPS_NATIVE=1: one library for this machine only (-march=native) instead of the ISA paths
        native = os.environ.get("ASCENDC_OPS_NATIVE")
        if not (BUILD / "CMakeCache.txt").exists() or native is not None:
            subprocess.check_call(["cmake", "-S", str(ROOT), "-B", str(BUILD), f"-DPython3_EXECUTABLE={sys.executable}",
                                   "-DCMAKE_BUILD_TYPE=Release", f"-DASCENDC_OPS_NATIVE={'ON' if native == '1' else 'OFF'}"])
        jobs = str(os.cpu_count() or 2)
        subprocess.check_call(["cmake", "--build", str(BUILD), "-j", jobs])
        for ext in self.extensions:
            target = Path(self.get_ext_fullpath(ext.name))
            if target.resolve() != LIBRARY:
                target.parent.mkdir(parents=True, exist_ok=True)
                for library in LIBRARY.parent.glob("_C*.so"):  # every ISA path's library (_isa.py picks one)
                    shutil.copy2(library, target.parent / library.name)


class BuildPyWithProtos(build_py):
    """Ships op_proto/*.json inside the package, where op_proto.default_dir() looks first."""

    def run(self):
        super().run()
        target = Path(self.build_lib) / "ascendc_ops" / "op_proto"
        target.mkdir(parents=True, exist_ok=True)
        for proto in (ROOT / "op_proto").glob("*.json"):
            shutil.copy2(proto, target / proto.name)


setup(
    name="ascendc-ops",
    version="0.1.0",
    description="Fused LLM ops (RoPE, RMSNorm, SwiGLU, MoE) as Ascend C kernels, with a CPU twin",
    package_dir={"": "python"},
    packages=find_packages("python"),  # ascendc_ops and its subpackages (ops, harness, patching, ...)
    ext_modules=[Extension("ascendc_ops._C", sources=[])],
    cmdclass={"build_ext": CMakeBuild, "build_py": BuildPyWithProtos},
    install_requires=["torch==2.13.0", "numpy"],
    entry_points={"console_scripts": ["ascendc-ops=ascendc_ops.__main__:main"]},
    python_requires=">=3.10",
)
