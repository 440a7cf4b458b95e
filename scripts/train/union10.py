"""union10: the training union of checkpoints/smollm2-135m-v7 (scripts/train/train-v7).

    union10.py V2 V3 V4 V5 OUT [V5_KINDS]

V2..V5 are the records of scripts/train/datagen-v2..v5 (records.jsonl); OUT gets the
union's train and val records (JSONL, train first). V5_KINDS 1 (default) adds datagen-v5's
four train kinds (union10); 0 leaves them out (union9, the "v10" run of v7's TRAINING.md).
The selection (seeded subsamples and shuffles) is the one v7 was trained on; train-v7 and
dev-sets (the development sets outside the union) both read it from here.
"""
import json, random, sys
from deg.train.data import read_records, subsample
v2, _, _ = read_records(sys.argv[1])
v3, _, _ = read_records(sys.argv[2])
v4, _, _ = read_records(sys.argv[3])
kind = lambda r: r["id"].split("/")[0]
def tag(r):
    return "short" if "/short" in r["id"] else ("nolist" if "/nolist" in r["id"] else "plain")
train = subsample(v2["train"], 960, 1)
val = subsample(v2["val"], 60, 2)
rng = random.Random(7)
for k in ("cheader", "gettext", "gnulog", "npm", "pkgconfig", "pymodule"):
    t = [r for r in v3["train"] if kind(r) == k]; rng.shuffle(t); train += t[:70]
    v = [r for r in v3["val"] if kind(r) == k]; rng.shuffle(v); val += v[:7]
u = [r for r in v3["val"] if kind(r) == "unit"]; rng.shuffle(u); val += u[:40]
rng = random.Random(9)
for k in ("cmakemod", "completion", "mimemap", "mimetype", "script"):
    t = [r for r in v4["train"] if kind(r) == k and tag(r) == "plain"]; rng.shuffle(t); train += t[:70]
    v = [r for r in v4["val"] if kind(r) == k and tag(r) == "plain"]; rng.shuffle(v); val += v[:7]
for g, nt, nv in (("short", 200, 20), ("nolist", 200, 20)):
    t = [r for r in v4["train"] if tag(r) == g]; rng.shuffle(t); train += t[:nt]
    v = [r for r in v4["val"] if tag(r) == g]; rng.shuffle(v); val += v[:nv]
if (sys.argv[6] if len(sys.argv) > 6 else "1") == "1":
    v5, _, _ = read_records(sys.argv[4])
    rng = random.Random(10)
    for k in ("charmap", "cmakedoc", "ompihelp", "vimrt"):
        t = [r for r in v5["train"] if kind(r) == k and tag(r) == "plain"]; rng.shuffle(t); train += t[:70]
        v = [r for r in v5["val"] if kind(r) == k and tag(r) == "plain"]; rng.shuffle(v); val += v[:7]
ids = set()
with open(sys.argv[5], "w") as f:
    for r in train + val:
        assert r["id"] not in ids, r["id"]
        ids.add(r["id"])
        f.write(json.dumps(r, ensure_ascii=False) + "\n")
print(f"union: {len(train)} train / {len(val)} val records")
