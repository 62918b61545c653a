"""The relay package for pip: pure Python over relay's C ABI, with the library built here.

    pip install --no-build-isolation ./python

builds librelay_c, librelay_c_cuda where nvcc is found and librelay_c_hip where a HIP compiler is
(ROCm's clang, or Debian's clang-22 with libamdhip64-dev: cmake/RelayHipLibrary.cmake), with
CMake from the repository this folder belongs to, and installs them inside the package
(relay/_lib), where it finds them without LD_LIBRARY_PATH (relay.torch loads the one matching
torch's build). RELAY_GPU=OFF builds the CPU library only; RELAY_C_LIBRARY_DIR=<dir> takes the
libraries already built there instead of building (a build tree's capi/ folder).
"""

import glob
import os
import re
import shutil
import subprocess

from setuptools import find_packages, setup
from setuptools.command.build_py import build_py

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def version():
    with open(os.path.join(ROOT, "CMakeLists.txt")) as f:
        return re.search(r"project\(relay VERSION ([0-9.]+)", f.read()).group(1)


class build_with_library(build_py):
    """build_py, then the C ABI libraries into relay/_lib."""

    def run(self):
        super().run()
        target = os.path.join(self.build_lib, "relay", "_lib")
        os.makedirs(target, exist_ok=True)
        prebuilt = os.environ.get("RELAY_C_LIBRARY_DIR")
        libraries = glob.glob(os.path.join(prebuilt or self._build(), "librelay_c*.so"))
        if not any(os.path.basename(p) == "librelay_c.so" for p in libraries):
            raise RuntimeError(f"no librelay_c.so was built (looked in {prebuilt or 'the build'})")
        for path in libraries:
            shutil.copy2(path, target)

    def _build(self):
        build = os.path.join(os.path.abspath(self.get_finalized_command("build").build_temp),
                             "relay-c")
        configure = ["cmake", "-S", ROOT, "-B", build, "-DCMAKE_BUILD_TYPE=Release",
                     "-DRELAY_BUILD_TESTS=OFF", "-DRELAY_BUILD_EXAMPLES=OFF"]
        subprocess.check_call(configure)
        with open(os.path.join(build, "relay_c_targets.txt")) as f:
            targets = f.read().split()
        subprocess.check_call(["cmake", "--build", build, "--parallel", "--target", *targets])
        return os.path.join(build, "capi")


setup(
    name="relay",
    version=version(),
    description="Link-balanced relay collectives from PyTorch, over relay's C ABI",
    packages=find_packages(include=["relay", "relay.*"]),
    python_requires=">=3.8",
    cmdclass={"build_py": build_with_library},
    # torchcomms.new_comm("relay", ...) loads relay.torchcomms through this entry point (its
    # import registers the backend with torchcomms).
    entry_points={"torchcomms.backends": ["relay = relay.torchcomms"]},
    zip_safe=False,
)
