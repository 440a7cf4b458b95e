"""datagen v5 (issue 12): v4 plus seven kinds of this machine's offline text, three
of them dev-only (`python -m deg.datagen --v5`; scripts/train/datagen-v5).

Additive like v3 / v4: every v2 / v3 / v4 record is the v4 run's byte for byte
(a kind's records depend only on (seed, kind, doc, record number)); the new
kinds (deg.datagen.v2.V5_PER_KIND) get v4's treatment (booleans balanced per
key, structure booleans, short documents, absent lists).
  * train kinds (split 80 / 10 / 10 by document): vimrt (kinds/vim.py), charmap
    (kinds/charmap.py), cmakedoc (kinds/cmake.py), ompihelp (kinds/ompi.py);
  * dev-only kinds (deg.datagen.v2.DEV5_KINDS, every document in `val`, never in
    train or test): debconf, docbase (kinds/rfc822.py: RFC-822-like stanzas other
    than Debian package control) and keyfile (kinds/keyfile.py: desktop entries,
    D-Bus service files, os-release). Their records are "dev5": a development
    set of kinds training never saw, for choosing heads and checkpoints.
`write_subsets` writes dev5.jsonl and train-v5-kinds.jsonl (the train records of
the new kinds) beside a run's records.
"""
import os

from . import write_jsonl
from .v2 import DEV5_KINDS, V5_PER_KIND
from .v4 import arrays_of

DEV5_FILE, TRAIN_FILE = "dev5.jsonl", "train-v5-kinds.jsonl"


def dev5(records):
    """The dev5 records: the `val` records of the dev-only kinds, in run order."""
    return [r for r in records if r["source"] in DEV5_KINDS and r["split"] == "val"]


def new_train(records):
    """The `train` records of datagen v5's kinds (none of them dev-only)."""
    return [r for r in records if r["source"] in V5_PER_KIND and r["split"] == "train"]


def write_subsets(records, out_dir):
    """Write dev5.jsonl and train-v5-kinds.jsonl into out_dir; report lines."""
    out = []
    for name, rs in ((DEV5_FILE, dev5(records)), (TRAIN_FILE, new_train(records))):
        path = os.path.join(out_dir, name)
        write_jsonl(rs, path)
        out.append(f"v5: wrote {len(rs)} records to {path}")
    return out


def _leaves(schema, value):
    """(booleans: [gold], null golds, enum fields) over a record's top-level fields."""
    bools, nulls, enums = [], 0, 0
    for k, spec in schema.get("properties", {}).items():
        v = value.get(k, None)
        if spec.get("type") == "boolean" and isinstance(v, bool):
            bools.append(v)
        if k not in value or v is None:
            nulls += 1
        if "enum" in spec or "oneOf" in spec:
            enums += 1
    return bools, nulls, enums


def report_v5(records):
    """Lines: per new kind and split the record count, and per split of the new
    kinds the boolean true share, empty arrays and fields whose gold is null or
    omitted (values absent from the text)."""
    out = []
    for kind in sorted(V5_PER_KIND):
        n = {s: sum(1 for r in records if r["source"] == kind and r["split"] == s)
             for s in ("train", "val", "test")}
        tag = " (dev-only)" if kind in DEV5_KINDS else ""
        out.append(f"v5 {kind:<9}{tag:<11} train {n['train']:>5}  val {n['val']:>5}  test {n['test']:>5}")
    for name, rs in (("dev5", dev5(records)), ("v5 train kinds", new_train(records))):
        bools, nulls, enums, arr, empty = [], 0, 0, 0, 0
        for r in rs:
            b, z, e = _leaves(r["schema"], r["value"])
            bools += b
            nulls += z
            enums += e
            a, y = arrays_of(r)
            arr, empty = arr + a, empty + y
        out.append(f"{name}: {len(rs)} records, booleans {sum(bools)}/{len(bools)} true "
                   f"({sum(bools) / max(len(bools), 1):.3f}), arrays {arr} ({empty} empty), "
                   f"null/omitted fields {nulls}, enum fields {enums}")
    return out
