"""`python -m deg.cli`: the deg command line (deg.cli.main)."""
import sys

from .main import main

sys.exit(main())
