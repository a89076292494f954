"""``python -m lookbench.space.prepare [--data DIR] [--assets DIR]``: build the Space's assets (same as ``lookbench demo --prepare``)."""
import sys

from lookbench.cli import main

if __name__ == "__main__":
    sys.exit(main(["demo", "--prepare", *sys.argv[1:]]))
