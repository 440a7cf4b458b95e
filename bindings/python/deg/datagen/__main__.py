"""python -m deg.datagen --out records.jsonl [--seed N] [--packages N] ..."""
import argparse
import json
import os
import sys

from . import debian, generate, write_jsonl


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python -m deg.datagen", description=__doc__)
    ap.add_argument("--out", required=True, help="records JSONL path (stats go to OUT.stats.json)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--packages", type=int, default=300, help="Debian package documents")
    ap.add_argument("--changelogs", type=int, default=150, help="Debian changelog documents")
    ap.add_argument("--synthetic", type=int, default=150, help="documents per synthetic source")
    ap.add_argument("--packages-list", action="append", default=None,
                    help="apt Packages list (repeatable; default /var/lib/apt/lists/*_Packages*)")
    ap.add_argument("--changelog-glob", default=debian.CHANGELOG_GLOB)
    a = ap.parse_args(argv)
    out_dir = os.path.dirname(os.path.abspath(a.out))
    try:  # before the (slow) generation, so a bad --out fails at once
        os.makedirs(out_dir, exist_ok=True)
    except OSError as e:
        print(f"python -m deg.datagen: cannot create {out_dir}: {e.strerror}", file=sys.stderr)
        return 2
    records, stats = generate(a.seed, a.packages, a.changelogs, a.synthetic,
                              a.packages_list, a.changelog_glob)
    write_jsonl(records, a.out)
    with open(a.out + ".stats.json", "w") as f:
        json.dump(stats, f, indent=1, sort_keys=True)
    print(json.dumps({k: stats[k] for k in ("records", "bad")}, sort_keys=True))
    for split, m in sorted(stats["modes"].items()):
        print(split, json.dumps(m, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
