"""_cli.py - the `tilec` console script of an installed package
(pyproject.toml [project.scripts]): replaces itself with the compiler binary
the package carries (tilec/bin/tilec), passing every argument through, so
`tilec --emit=c kernel.tile` behaves exactly as the CMake-built CLI.

In a source checkout (no bundled binary) it runs <repo>/build/bin/tilec, or
$TILEC_BUILD_DIR/bin/tilec, when there is one.
"""

import os
import sys

from . import _ffi


def binary_path():
    """The tilec executable this package runs, or None."""
    found = _ffi.bundled_path("bin", "tilec")
    if found:
        return found
    dirs = []
    if os.environ.get("TILEC_BUILD_DIR"):
        dirs.append(os.environ["TILEC_BUILD_DIR"])
    dirs.append(os.path.join(_ffi._HERE, "..", "..", "build"))
    for d in dirs:
        path = os.path.normpath(os.path.join(d, "bin", "tilec"))
        if os.access(path, os.X_OK):
            return path
    return None


def main(argv=None):
    args = sys.argv[1:] if argv is None else list(argv)
    exe = binary_path()
    if exe is None:
        sys.stderr.write("tilec: this package has no compiler binary (tilec/bin/tilec); install it "
                         "with `pip install .`, or build the tilec_cli target\n")
        return 127
    sys.stdout.flush()
    sys.stderr.flush()
    os.execv(exe, [exe] + args)


if __name__ == "__main__":
    sys.exit(main())
