"""python -m deg.train (see deg/train/cli.py)."""
import sys

from .cli import main

sys.exit(main())
