"""Which program runs the worker ranks of ``LLM(tensor_parallel_size=N)``.

The mp backend starts ranks 1..N-1 as ``EXECUTABLE worker --rank R ...`` (src/parallel/
worker_processes.h). The C++ default, /proc/self/exe, is the Python interpreter here, so the
package passes the ``lmrun`` command instead: ``$LMRUN_BIN`` when set, else the copy the build
puts inside the package (``lmrun/bin/lmrun``: python/CMakeLists.txt in the build tree, setup.py
in an installed package), which was built from the same sources as the native module and so
speaks the same start-up protocol.
"""

from __future__ import annotations

import os
import pathlib

PACKAGED_BINARY = pathlib.Path(__file__).resolve().parent / "bin" / "lmrun"


def worker_executable() -> str:
    """The path of the ``lmrun`` binary the worker ranks run.

    Raises:
        FileNotFoundError: ``$LMRUN_BIN`` names no executable file, or it is unset and the
            package has no ``bin/lmrun`` (the message says how to fix it).
    """
    from_environment = os.environ.get("LMRUN_BIN")
    if from_environment:
        if not (os.path.isfile(from_environment) and os.access(from_environment, os.X_OK)):
            raise FileNotFoundError(f"LMRUN_BIN={from_environment} is not an executable file (it must be the "
                                    "lmrun command built with this package, for the tensor-parallel workers)")
        return os.path.abspath(from_environment)
    if PACKAGED_BINARY.is_file() and os.access(PACKAGED_BINARY, os.X_OK):
        return str(PACKAGED_BINARY)
    raise FileNotFoundError(
        f"tensor_parallel_size > 1 runs its workers with the lmrun command, but {PACKAGED_BINARY} does not "
        "exist: reinstall the package (pip install . copies it there; in a build tree, `cmake --build build "
        "--target lmrun_python` does) or set LMRUN_BIN to the lmrun binary built from the same sources")
