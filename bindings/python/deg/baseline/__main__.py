"""python -m deg.baseline --records R.jsonl [--split test] [--model GGUF] --out DIR

Runs the constrained-decoding baseline (deg.baseline) on datagen records and
writes the same report and metrics as `python -m deg.evaluate --system baseline`.
"""
import sys

from ..evaluate.__main__ import main as evaluate_main


def main(argv=None):
    argv = list(sys.argv[1:] if argv is None else argv)
    if "--system" not in argv:
        argv += ["--system", "baseline"]
    return evaluate_main(argv)


if __name__ == "__main__":
    sys.exit(main())
