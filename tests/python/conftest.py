# The Python package's tests run against the package in this tree (python/) and the libraries of
# a build tree (RELAY_C_LIBRARY_DIR, which ctest sets), so nothing needs installing first.
import os
import sys

_here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, _here)
sys.path.insert(0, os.path.join(_here, "..", "..", "python"))
