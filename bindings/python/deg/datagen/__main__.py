"""python -m deg.datagen --out records.jsonl [--v2 | --v3 | --v4 | --v5] [--seed N] [--packages N] ...

Without --v2: the v1 run (Debian package records, changelogs, synthetic
documents). With --v2: datagen v2 (deg.datagen.v2: many document kinds of real
offline text, varied schemas and layouts) plus the v1 sources at a small share
(--packages / --changelogs / --synthetic default to deg.datagen.v2.V1_SHARE).
With --v3: --v2 plus datagen v3's kinds (deg.datagen.v2.V3_PER_KIND); the v2
kinds' records are the --v2 run's, byte for byte.
With --v4: --v3 plus datagen v4's kinds (deg.datagen.v2.V4_PER_KIND) and its
extra records of every kind (deg.datagen.v4: short documents, absent lists,
structure booleans); the v2 / v3 kinds' own records are the --v3 run's.
With --v5: --v4 plus datagen v5's kinds (deg.datagen.v2.V5_PER_KIND; deg.datagen.v5),
the v2 / v3 / v4 records unchanged; also writes dev5.jsonl (the dev-only kinds'
records) and train-v5-kinds.jsonl (the new kinds' train records) beside OUT.
Stats go to OUT.stats.json; a report is printed at the end.
"""
import argparse
import json
import os
import sys

from . import debian, generate, write_jsonl


def _kind_count(s):
    k, _, n = s.partition("=")
    if not n.isdigit():
        raise argparse.ArgumentTypeError(f"{s!r}: expected KIND=N")
    return k, int(n)


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python -m deg.datagen", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True, help="records JSONL path (stats go to OUT.stats.json)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--v2", action="store_true", help="datagen v2 (issue 12)")
    ap.add_argument("--v3", action="store_true",
                    help="datagen v3: v2 plus the kinds of deg.datagen.v2.V3_PER_KIND (unit, "
                         "pkgconfig, npm, cheader, pymodule, perlpod, info, gettext, gnulog)")
    ap.add_argument("--v4", action="store_true",
                    help="datagen v4: v3 plus the kinds of deg.datagen.v2.V4_PER_KIND (mimetype, "
                         "mimemap, script, completion, cmakemod, distro) and deg.datagen.v4's short "
                         "documents, absent lists and structure booleans")
    ap.add_argument("--v5", action="store_true",
                    help="datagen v5: v4 plus the kinds of deg.datagen.v2.V5_PER_KIND (vimrt, "
                         "charmap, cmakedoc, ompihelp; dev-only: debconf, docbase, keyfile)")
    ap.add_argument("--kind", action="append", type=_kind_count, default=[], metavar="KIND=N",
                    help="v2: documents of one kind (repeatable; KIND=0 drops it; default "
                         "deg.datagen.v2.DEFAULT_PER_KIND)")
    ap.add_argument("--withhold", type=float, default=0.0, metavar="P",
                    help="v2: probability that a rendered document leaves one fact out and the "
                         "schema asks for it anyway (hard negatives: gold null / omitted / []; "
                         "0 = datagen v2 as published)")
    ap.add_argument("--packages", type=int, default=None, help="Debian package documents")
    ap.add_argument("--changelogs", type=int, default=None, help="Debian changelog documents")
    ap.add_argument("--synthetic", type=int, default=None, help="documents per synthetic source")
    ap.add_argument("--packages-list", action="append", default=None,
                    help="apt Packages list (repeatable; default /var/lib/apt/lists/*_Packages*)")
    ap.add_argument("--changelog-glob", default=debian.CHANGELOG_GLOB)
    a = ap.parse_args(argv)
    a.v4 = a.v4 or a.v5
    a.v3 = a.v3 or a.v4
    a.v2 = a.v2 or a.v3
    if not 0.0 <= a.withhold <= 1.0:
        ap.error(f"--withhold {a.withhold}: a probability in [0, 1]")
    from . import v2
    unknown = [k for k, _ in a.kind if k not in v2.KINDS]
    if unknown:
        ap.error(f"unknown --kind {', '.join(unknown)} (kinds: {', '.join(sorted(v2.KINDS))})")
    dflt = v2.V1_SHARE if a.v2 else {"packages": 300, "changelogs": 150, "synthetic": 150}
    n = {k: (getattr(a, k) if getattr(a, k) is not None else dflt[k]) for k in dflt}
    out_dir = os.path.dirname(os.path.abspath(a.out))
    try:  # before the (slow) generation, so a bad --out fails at once
        os.makedirs(out_dir, exist_ok=True)
    except OSError as e:
        print(f"python -m deg.datagen: cannot create {out_dir}: {e.strerror}", file=sys.stderr)
        return 2
    v1_records, v1_stats = generate(a.seed, n["packages"], n["changelogs"], n["synthetic"],
                                    a.packages_list, a.changelog_glob)
    if a.v2:
        per_kind = dict(v2.DEFAULT_PER_KIND)
        if a.v3:
            per_kind.update(v2.V3_PER_KIND)
        if a.v4:
            per_kind.update(v2.V4_PER_KIND)
        if a.v5:
            per_kind.update(v2.V5_PER_KIND)
        per_kind.update(dict(a.kind))
        records, stats = v2.generate_v2(a.seed, per_kind, withhold=a.withhold, v4=a.v4)
        v2.merge_v1(records, stats, v1_records, a.seed)
        for k, c in v1_stats["bad"].items():
            stats["bad"][k] = stats["bad"].get(k, 0) + c
        stats["bad_examples"] += v1_stats["bad_examples"]
    else:
        records, stats = v1_records, v1_stats
    write_jsonl(records, a.out)
    with open(a.out + ".stats.json", "w") as f:
        json.dump(stats, f, indent=1, sort_keys=True)
    if a.v2:
        print("\n".join(v2.report(stats)))
        if a.v4:
            from .v4 import report_v4
            print("\n".join(report_v4(records)))
        if a.v5:
            from .v5 import report_v5, write_subsets
            for line in write_subsets(records, out_dir) + report_v5(records):
                print(line)
    else:
        print(json.dumps({k: stats[k] for k in ("records", "bad")}, sort_keys=True))
        for split, m in sorted(stats["modes"].items()):
            print(split, json.dumps(m, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
