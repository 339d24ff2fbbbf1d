"""Builds the extension module with the repository's CMake project and packages it.

The module is a target of the main build (python/CMakeLists.txt). This reuses a build folder,
$CHATTERBOX_BUILD_DIR or the repository's build/ (scripts/setup.sh's), building only the module
there: after scripts/setup.sh, pip install takes seconds. A missing build folder is configured
(Release) first, the third-party sources fetched when absent.
"""

import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

ROOT = Path(__file__).resolve().parent.parent
MODULE_TARGET = "chatterbox_engine_python"


def run(*command):
    print("chatterbox_engine:", " ".join(str(part) for part in command), flush=True)
    subprocess.run([str(part) for part in command], check=True)


class CMakeBuild(build_ext):
    def build_extension(self, ext):
        build_dir = Path(os.environ.get("CHATTERBOX_BUILD_DIR", ROOT / "build")).resolve()
        if not (build_dir / "CMakeCache.txt").exists():
            if not (ROOT / "third_party" / "ggml-src").exists():
                run("bash", ROOT / "scripts" / "fetch_ggml.sh", ROOT / "third_party" / "ggml-src")
            if not (ROOT / "third_party" / "cppjieba").exists():
                run("bash", ROOT / "scripts" / "fetch_cppjieba.sh", ROOT / "third_party" / "cppjieba")
            run("cmake", "-S", ROOT, "-B", build_dir, "-G", "Ninja", "-DCMAKE_BUILD_TYPE=Release")
        run("cmake", "--build", build_dir, "--target", MODULE_TARGET, f"-j{os.cpu_count() or 1}")
        suffix = sysconfig.get_config_var("EXT_SUFFIX")
        built = build_dir / "python" / "chatterbox_engine" / ("_chatterbox_engine" + suffix)
        if not built.exists():
            found = sorted(p.name for p in built.parent.glob("_chatterbox_engine*"))
            sys.exit(
                f"chatterbox_engine: {built} was not built: the build folder made {found or 'no module'} "
                f"(its Python is CHATTERBOX_PYTHON_EXECUTABLE in {build_dir}/CMakeCache.txt; this is {sys.executable})"
            )
        target = Path(self.get_ext_fullpath(ext.name))
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(built, target)


setup(ext_modules=[Extension("chatterbox_engine._chatterbox_engine", sources=[])], cmdclass={"build_ext": CMakeBuild})
