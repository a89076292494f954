"""``python -m lookbench …`` and ``accelerate launch -m lookbench evaluate …``."""
import sys

from lookbench.cli import main

if __name__ == "__main__":
    sys.exit(main())
