"""python -m tilec ARGS: the tilec compiler CLI (what the `tilec` console script runs)."""
import sys

from ._cli import main

sys.exit(main())
