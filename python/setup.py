"""Builds the native module _shelfmark with the project's CMake (the
repository root is this folder's parent) and packages it with the
`shelfmark` and `mooncake` packages. pyproject.toml holds the metadata.

Environment: SHELFMARK_CMAKE_BUILD_DIR reuses a configured build tree;
CMAKE_BUILD_PARALLEL_LEVEL caps the build's jobs (default 2);
SHELFMARK_CMAKE_ARGS adds configure arguments.
"""

import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent


class CMakeBuild(build_ext):
    def build_extension(self, ext):
        build = Path(os.environ.get("SHELFMARK_CMAKE_BUILD_DIR")
                     or Path(self.build_temp).resolve() / "cmake")
        if not (build / "CMakeCache.txt").exists():
            args = ["cmake", "-S", str(ROOT), "-B", str(build),
                    "-DCMAKE_BUILD_TYPE=Release", "-DPython_EXECUTABLE=" + sys.executable]
            if shutil.which("ninja"):
                args += ["-G", "Ninja"]
            args += shlex.split(os.environ.get("SHELFMARK_CMAKE_ARGS", ""))
            subprocess.check_call(args)
        jobs = os.environ.get("CMAKE_BUILD_PARALLEL_LEVEL", "2")
        subprocess.check_call(["cmake", "--build", str(build), "--target", "_shelfmark",
                               "-j", jobs])
        built = sorted((build / "python").glob("_shelfmark*.so"))
        if not built:
            raise RuntimeError("the build made no _shelfmark module under %s/python "
                               "(is pybind11-dev installed?)" % build)
        target = Path(self.get_ext_fullpath(ext.name))
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(built[-1], target)


setup(ext_modules=[Extension("_shelfmark", sources=[])], cmdclass={"build_ext": CMakeBuild})
