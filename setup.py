"""Builds and installs the `lmrun` Python package from this checkout with CMake.

    python3 -m venv --system-site-packages .venv
    .venv/bin/pip install --no-build-isolation --no-index .

Only Debian's packages are needed (cmake, ninja-build, pybind11-dev, python3-dev,
python3-setuptools, python3-wheel: scripts/install_deps.sh); nothing is downloaded. The native
module is built by the `lmrun_python` CMake target (python/CMakeLists.txt) for the interpreter
running this script, and the `lmrun` command it needs for tensor-parallel workers lands in
lmrun/bin; LMRUN_CMAKE_ARGS adds CMake options, LMRUN_BUILD_DIR picks the build folder.
"""

import os
import pathlib
import shlex
import shutil
import subprocess
import sys

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

ROOT = pathlib.Path(__file__).resolve().parent


class CMakeBuild(build_ext):
    def build_extension(self, ext):
        build_dir = pathlib.Path(os.environ.get("LMRUN_BUILD_DIR", ROOT / "build-python")).resolve()
        generator = ["-G", "Ninja"] if shutil.which("ninja") else []
        launcher = ["-DCMAKE_CXX_COMPILER_LAUNCHER=ccache"] if shutil.which("ccache") else []
        configure = ["cmake", "-S", str(ROOT), "-B", str(build_dir), *generator, *launcher,
                     "-DCMAKE_BUILD_TYPE=Release", "-DLMRUN_BUILD_TESTS=OFF", "-DLMRUN_BUILD_PYTHON=ON",
                     f"-DPython_EXECUTABLE={sys.executable}",
                     *shlex.split(os.environ.get("LMRUN_CMAKE_ARGS", ""))]
        subprocess.run(configure, check=True)
        jobs = str(os.cpu_count() or 1)
        subprocess.run(["cmake", "--build", str(build_dir), "--target", "lmrun_python", "-j", jobs], check=True)
        package_dir = build_dir / "python" / "lmrun"
        built = next(package_dir.glob("_lmrun*.so"))
        target = pathlib.Path(self.get_ext_fullpath(ext.name))
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(built, target)
        # The lmrun command, for the tensor-parallel worker ranks (lmrun/worker_executable.py);
        # copy2 keeps its executable bit.
        (target.parent / "bin").mkdir(exist_ok=True)
        shutil.copy2(package_dir / "bin" / "lmrun", target.parent / "bin" / "lmrun")


setup(
    name="lmrun",
    version="0.1.0",
    description="vLLM's offline Python API over lmrun, a C++ LLM inference engine for the CPU",
    python_requires=">=3.9",
    packages=["lmrun"],
    package_dir={"": "python"},
    package_data={"lmrun": ["*.pyi", "py.typed"]},
    ext_modules=[Extension("lmrun._lmrun", sources=[])],
    cmdclass={"build_ext": CMakeBuild},
    zip_safe=False,
)
