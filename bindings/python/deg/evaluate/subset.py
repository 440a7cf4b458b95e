"""A fixed, stratified evaluation subset of datagen records.

    subset = stratified_subset(records, 150, seed=0)

Strata are (source, template) pairs (datagen record fields). Each stratum gets
a share of `n` proportional to its size (largest remainder, ties broken by
stratum name), but at least one record while n >= the number of strata, so a
rare layout is never left out. Inside a stratum the records are drawn with
random.Random(f"{seed}:{stratum}") — a stratum's pick does not depend on the
other strata. The subset keeps the input order, so the same records file,
split, n and seed always give the same subset.
"""
import random

__all__ = ["stratified_subset", "stratum_of", "strata_counts", "run_order"]


def stratum_of(rec):
    return f"{rec.get('source', '?')}/{rec.get('template', '?')}"


def strata_counts(records):
    out = {}
    for r in records:
        k = stratum_of(r)
        out[k] = out.get(k, 0) + 1
    return dict(sorted(out.items()))


def _allocate(sizes, n):
    """{stratum: count} summing to min(n, total) (see module doc)."""
    total = sum(sizes.values())
    if n >= total:
        return dict(sizes)
    keys = sorted(sizes)
    alloc = {k: 0 for k in keys}
    if n >= len(keys):  # one each first, the rest proportionally
        for k in keys:
            alloc[k] = 1
    rest = n - sum(alloc.values())
    room = {k: sizes[k] - alloc[k] for k in keys}
    room_total = sum(room.values())
    quota = {k: rest * room[k] / room_total for k in keys}
    for k in keys:
        alloc[k] += int(quota[k])
    left = n - sum(alloc.values())
    by_remainder = sorted(keys, key=lambda k: (-(quota[k] - int(quota[k])), k))
    for k in by_remainder:
        if left == 0:
            break
        if alloc[k] < sizes[k]:
            alloc[k] += 1
            left -= 1
    return alloc


def stratified_subset(records, n, seed=0):
    """The subset of `records` described in the module doc (n None or >= len: all)."""
    if n is None or n >= len(records):
        return list(records)
    if n < 1:
        raise ValueError("subset size must be >= 1")
    groups = {}
    for i, r in enumerate(records):
        groups.setdefault(stratum_of(r), []).append(i)
    alloc = _allocate({k: len(v) for k, v in groups.items()}, n)
    keep = set()
    for k, idx in groups.items():
        keep.update(random.Random(f"{seed}:{k}").sample(idx, alloc[k]))
    return [r for i, r in enumerate(records) if i in keep]


def run_order(records, seed=0):
    """The order to run `records` in: a permutation seeded by `seed`, so any
    prefix of a run (one cut short by a deadline) is a uniform random sample
    of the subset, not its first strata."""
    out = list(records)
    random.Random(f"{seed}:order").shuffle(out)
    return out
