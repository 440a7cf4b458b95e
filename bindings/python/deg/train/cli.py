"""deg.train command line (python -m deg.train): train the deg heads on datagen records (deg contract §12.3, §12.4).

    python -m deg.train --data records.jsonl --model SmolLM2.gguf --out runs/v1 \\
        --epochs 8 --lr 1e-3 --batch 8 --seed 0

The backbone is frozen: every selected record is traced once through the runtime's
trunk and forks (deg_features_extract, teacher-forced array counts) and its
features are cached under --cache (default OUT/cache). The heads then train over
the cached features with the §12.4 losses (libdeg deg_train_loss_grad), AdamW with
warmup + cosine, option-order shuffling through `--variants` fixed shuffled copies
of each record's choice forks (each epoch a record uses one with p = 0.5).

With --anchor (§12.4 anchor / anchor_count, §12.6 "Training gold"), every
record with anchored arrays (deg.datagen.record.anchor_gold) is also traced in
anchor mode under its gold anchors (deg_features_extract_anchored; cached in
the same directory under distinct keys), and the loss adds --anchor-weight x
the mean anchor BCE, --anchor-count-weight x the mean anchor_count CE, and the
forks inside anchored items (extracts with the anchored-extract bias) to the
decide / extract / count means. Left-out anchored arrays are counted in
train-report.json ("anchor"). --array-mode anchor / --anchor-min-tokens N set
the random start checkpoint's deg.json (so the result fills in anchor mode);
records under N context tokens then get no anchor trace (index mode, §12.6).

Every epoch writes OUT/epochs/epoch-NNN/ (deg.json, heads.safetensors, optim.npz,
state.json); with --snapshot-every S also OUT/epochs/epoch-NNN-step-SSSSSS/ every
S steps inside an epoch (the newest one kept, plus the epoch's running loss sums),
so a LoRA epoch of hours survives a kill. --resume continues from the newest
snapshot and gives bitwise the uninterrupted run (the epoch's shuffling comes from
a generator seeded by (seed, epoch), so steps already done are skipped exactly). At the end one temperature per head kind is fit on val (§12.3) and the
checkpoint is written to OUT (deg.json with "calibration" and "training",
heads.safetensors) with OUT/train-report.json.

With --lora-rank R (§12.7, deg/train/lora.py) the backbone trains too, through
the fork path: LoRA adapters (rank R, --lora-alpha, on --lora-targets of every
layer; --lora-selector kind = a "decide" and an "extract" adapter, shared = one)
are added to the start checkpoint (B = 0: the start is the start checkpoint's
outputs exactly) or continued when it has the same ones, and every step re-runs
each record's forks with their adapters over the base trunk (token traces,
cached like the features), backpropagates the head losses into the adapters,
and steps heads and adapters with the one AdamW (adapter peak lr --lora-lr,
default --lr). The saved checkpoints carry adapters.safetensors + deg.json
"lora" (deg.fill runs them); x-generate rows stay on the base model. val loss
and calibration re-trace the val records with the current adapters.

Each optimizer step's gradient is the sum of the batch's per-record gradients
in batch order. Under `mpirun -np N python -m deg.train ...` (mpi4py; see
deg/train/parallel.py) every rank traces its share of the records into the
shared feature cache, computes the gradients of its contiguous block of each
batch, and the blocks are summed in rank order: the heads, optimizer state
and history are bitwise those of one process on the same arguments, for any
N (--batch is the union batch). Only rank 0 logs and writes OUT; --resume
works across rank counts.
"""
import argparse
import glob
import json
import math
import os
import shutil
import sys
import time

import numpy as np

from ..atomic import atomic_write as _atomic_write
from ..datagen.record import anchor_gold
from ..errors import DegError
from ..fill import create_random_checkpoint, load
from . import calibrate, data, features, lora, parallel
from .engine import KINDS, LOSS_KINDS, Heads
from .optim import AdamW, lr_at

# Arguments that must match for --resume.
_RESUME_KEYS = ("data", "epochs", "lr", "batch", "warmup", "seed", "max_records",
                "max_val_records", "variants", "weight_decay", "clip", "extract_init_scale",
                "anchor", "anchor_weight", "anchor_count_weight", "array_mode",
                "anchor_min_tokens", "lora_rank", "lora_alpha", "lora_selector", "lora_targets",
                "lora_lr", "lora_checkpointing")
# Their values in runs saved before the key existed.
_RESUME_DEFAULTS = {"anchor": False, "anchor_weight": 1.0, "anchor_count_weight": 0.0,
                    "array_mode": None, "anchor_min_tokens": None, "lora_rank": None,
                    "lora_alpha": 16.0, "lora_selector": "kind", "lora_targets": "all",
                    "lora_lr": None, "lora_checkpointing": "on"}


def parse_args(argv):
    p = argparse.ArgumentParser(prog="python -m deg.train", description=__doc__.split("\n")[0])
    p.add_argument("--data", required=True, help="datagen records (JSONL)")
    p.add_argument("--model", help="backbone (GGUF file or HF directory); the random start "
                   "checkpoint is made for it (required without --init)")
    p.add_argument("--init", help="start from this checkpoint directory instead of random heads")
    p.add_argument("--out", required=True, help="output directory")
    p.add_argument("--epochs", type=int, default=8)
    p.add_argument("--lr", type=float, default=1e-3, help="peak learning rate")
    p.add_argument("--batch", type=int, default=8, help="records per optimizer step")
    p.add_argument("--warmup", type=int, default=20, help="warmup steps")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--weight-decay", type=float, default=0.01)
    p.add_argument("--clip", type=float, default=1.0, help="global gradient norm clip (0 = off)")
    p.add_argument("--extract-init-scale", type=float, default=0.25,
                   help="scale of the random extract.q*/k* at the start (their logits have no "
                   "1/sqrt(D), so unscaled they start ~16x sharper than the pointer heads)")
    p.add_argument("--variants", type=int, default=2,
                   help="shuffled choice-fork variants per record (option-order shuffling)")
    p.add_argument("--anchor", action="store_true",
                   help="also train the anchor heads (§12.6): anchor-mode features of every "
                   "record with anchored arrays, under its gold anchors")
    p.add_argument("--anchor-weight", type=float, default=1.0,
                   help="weight of the mean anchor BCE in the loss (with --anchor)")
    p.add_argument("--anchor-count-weight", type=float, default=0.0,
                   help="weight W of the mean anchor_count CE (count fork of anchored arrays; "
                   "0 = off, §12.4)")
    p.add_argument("--array-mode", choices=("index", "anchor"),
                   help="deg.json array_mode of the random start checkpoint (default index); "
                   "with --init it must be the init's")
    p.add_argument("--anchor-min-tokens", type=int,
                   help="deg.json anchor_min_tokens of the random start checkpoint (default 0; "
                   "with --init it must be the init's); with --anchor, records with fewer "
                   "context tokens get no anchor trace (they fill in index mode, §12.6)")
    p.add_argument("--lora-rank", type=int, help="train LoRA adapters of this rank (1..256) "
                   "on the fork path jointly with the heads (§12.7; default: heads only)")
    p.add_argument("--lora-alpha", type=float, default=16.0,
                   help="LoRA alpha (scale alpha / rank; default 16)")
    p.add_argument("--lora-selector", choices=("kind", "shared"), default="kind",
                   help="kind: a decide and an extract adapter (by fork kind); shared: one")
    p.add_argument("--lora-targets", default="all",
                   help="adapted projections: all, or a comma list of q,k,v,o,gate,up,down")
    p.add_argument("--lora-lr", type=float,
                   help="peak learning rate of the adapters (default --lr)")
    p.add_argument("--lora-checkpointing", choices=("on", "off"), default="on",
                   help="on: the tape keeps each layer's input and recomputes the layer in the "
                   "backward (bitwise the same gradients, far less memory); off: keeps all")
    p.add_argument("--max-records", type=int, help="train on a stratified subsample of this "
                   "many train records")
    p.add_argument("--max-val-records", type=int, help="calibrate/validate on this many val records")
    p.add_argument("--cache", help="feature cache directory (default OUT/cache)")
    p.add_argument("--resume", action="store_true",
                   help="continue from OUT's newest epoch or step snapshot")
    p.add_argument("--snapshot-every", type=int, default=0, metavar="STEPS",
                   help="also snapshot inside an epoch every STEPS optimizer steps (0 = at epoch "
                   "ends only), so a long epoch (LoRA) survives a kill; --resume continues from "
                   "the newest snapshot bitwise; an epoch's end removes its step snapshots")
    p.add_argument("--threads", type=int, default=0, help="libdeg threads (0 = default)")
    p.add_argument("--no-backbone-path", action="store_true",
                   help="leave backbone.path out of the final deg.json (shipped checkpoints)")
    p.add_argument("--features-only", action="store_true",
                   help="trace and cache the selected records' features, then stop")
    p.add_argument("--stop-after-epoch", type=int, help=argparse.SUPPRESS)  # tests: interruption
    p.add_argument("--stop-after-step", type=int, help=argparse.SUPPRESS)  # tests: interruption
    p.add_argument("--no-progress", action="store_true", help="no progress bars")
    a = p.parse_args(argv)
    if not a.model and not a.init:
        p.error("--model or --init is required")
    for k in ("epochs", "batch"):
        if getattr(a, k) < 1:
            p.error(f"--{k} must be >= 1")
    if a.variants < 0 or a.warmup < 0:
        p.error("--variants and --warmup must be >= 0")
    if a.snapshot_every < 0:
        p.error("--snapshot-every must be >= 0 (0 = epoch ends only)")
    if a.anchor_min_tokens is not None and a.anchor_min_tokens < 0:
        p.error("--anchor-min-tokens must be >= 0")
    if a.anchor_weight < 0 or a.anchor_count_weight < 0:
        p.error("--anchor-weight and --anchor-count-weight must be >= 0")
    _check_lora_args(p, a, argv)
    return a


def _check_lora_args(p, a, argv):
    """Refuse LoRA options that cannot work, saying which and why."""
    given = [x.split("=")[0] for x in (argv if argv is not None else sys.argv[1:])
             if isinstance(x, str) and x.startswith("--lora-")]
    if a.lora_rank is None:
        if given:
            p.error(f"{given[0]} needs --lora-rank (LoRA training is off without it)")
        return
    if not 1 <= a.lora_rank <= 256:
        p.error(f"--lora-rank must be in [1, 256], got {a.lora_rank}")
    if not math.isfinite(a.lora_alpha) or a.lora_alpha <= 0:
        p.error(f"--lora-alpha must be a finite number > 0, got {a.lora_alpha}")
    if a.lora_lr is not None and (not math.isfinite(a.lora_lr) or a.lora_lr < 0):
        p.error(f"--lora-lr must be a finite number >= 0, got {a.lora_lr}")
    try:
        from .lora import parse_targets
        parse_targets(a.lora_targets)
    except ValueError as e:
        p.error(f"--lora-targets: {e}")



def _bar(it, args, **kw):
    if args.no_progress:
        return it
    from tqdm import tqdm
    return tqdm(it, file=sys.stderr, dynamic_ncols=True, **kw)


# Under mpirun only rank 0 logs (progress and results); errors print on every
# rank (the rank that fails first aborts the job: its message is out by then).
_QUIET = False


def _log(msg, error=False):
    if error or not _QUIET:
        print(msg, file=sys.stderr, flush=True)


class Item:
    """A usable record: the record, its plan, base features, shuffled variants, and
    (--anchor) its anchor-mode features or None."""
    __slots__ = ("rec", "plan", "base", "variants", "anchor")

    def __init__(self, rec, plan, base, variants, anchor=None):
        self.rec, self.plan, self.base, self.variants = rec, plan, base, variants
        self.anchor = anchor


def new_anchor_stats():
    return {"records": 0, "arrays": 0, "skipped_arrays": 0, "shared_token": 0, "gold_none": 0,
            "bad_records": 0, "below_min_tokens": 0, "seconds": 0.0, "traced": 0}


def prepare_anchor(rec, plan, base, ckpt, sha, cache, stats, bad_ex, min_tokens, tokens=False):
    """Anchor-mode features of a good record (None when it has no anchored array
    with gold anchors, is shorter than min_tokens context tokens, or its anchor gold
    or trace is unusable: counted in stats, the record still trains in index mode);
    tokens: a token trace (LoRA)."""
    if base.ctx.shape[0] < min_tokens:
        stats["below_min_tokens"] += 1
        return None
    try:
        gold = anchor_gold(rec)
    except (DegError, KeyError, TypeError, ValueError) as e:
        stats["bad_records"] += 1
        bad_ex.append({"id": rec.get("id"), "why": f"anchor_gold_error: {e}"})
        return None
    nones = sum(v is None for v in gold.values())
    stats["gold_none"] += nones
    if len(gold) == nones:
        stats["skipped_arrays"] += nones
        return None
    t0 = time.time()
    try:
        feats, hit = features.get_anchored(ckpt, sha, cache, rec, gold, tokens)
        data.anchor_examples_of(rec, plan, feats)  # targets are checkable now
    except (data.BadRecord, DegError) as e:
        stats["bad_records"] += 1
        bad_ex.append({"id": rec.get("id"), "why": f"anchor_features_error: {e}"})
        return None
    stats["seconds"] += time.time() - t0
    stats["traced"] += not hit
    if feats.ctx.shape == base.ctx.shape and np.array_equal(feats.ctx, base.ctx):
        feats.ctx = base.ctx  # the same trunk: keep one copy in memory
    c = feats.anchor_counts
    stats["arrays"] += c["arrays"]
    stats["skipped_arrays"] += c["skipped"] + c["shared"]
    stats["shared_token"] += c["shared"]
    if not c["arrays"]:
        return None
    stats["records"] += 1
    return feats


def prepare(records, ckpt, sha, cache, n_variants, bad, bad_ex, args, what, anchor_stats=None):
    """Items of the records whose features and targets are usable; the others
    are counted in bad by reason. anchor_stats (a new_anchor_stats dict): also
    the anchor-mode features (--anchor)."""
    items = []
    t0 = time.time()
    traced = 0
    tokens = args.lora_rank is not None  # LoRA: token traces (re-run every step)
    for rec in _bar(records, args, desc=f"features {what}", unit="rec"):
        try:
            plan = data.check_record(rec)
            base, hit = features.get(ckpt, sha, cache, rec, 0, tokens)
            traced += not hit
            variants = []
            if any(f.mode == "decide.choice" for f in plan.fields):
                for v in range(1, n_variants + 1):
                    fv, hit = features.get(ckpt, sha, cache, rec, v, tokens)
                    traced += not hit
                    variants.append(fv)
            data.examples_of(rec, plan, base)  # targets are checkable now
        except data.BadRecord as e:
            bad[e.reason] += 1
            bad_ex.append({"id": rec.get("id"), "why": str(e)})
            continue
        except DegError as e:
            bad["features_error"] += 1
            bad_ex.append({"id": rec.get("id"), "why": f"features_error: {e}"})
            continue
        anchor = None
        if anchor_stats is not None:
            anchor = prepare_anchor(rec, plan, base, ckpt, sha, cache, anchor_stats, bad_ex,
                                    args.anchor_min_tokens or 0, tokens)
        items.append(Item(rec, plan, base, variants, anchor))
    return items, time.time() - t0, traced


def prepare_sharded(comm, records, ckpt, sha, cache, n_variants, bad, bad_ex, args, what,
                    anchor_stats=None):
    """prepare() of records; under MPI each rank first traces its share
    (comm.share) into the shared feature cache, then every rank loads them all.
    The counts are the single-process ones; traced (and the anchor stats'
    traced) are summed over the ranks' shares."""
    if comm.size == 1:
        return prepare(records, ckpt, sha, cache, n_variants, bad, bad_ex, args, what,
                       anchor_stats)
    t0 = time.time()
    own_anchor = new_anchor_stats() if anchor_stats is not None else None
    _, _, traced = prepare(comm.share(records), ckpt, sha, cache, n_variants, type(bad)(), [],
                           args, f"{what} (rank 0's share)", own_anchor)
    comm.barrier()
    items, _, again = prepare(records, ckpt, sha, cache, n_variants, bad, bad_ex, args, what,
                              anchor_stats)
    if anchor_stats is not None:
        for k in ("traced", "seconds"):
            anchor_stats[k] = comm.sum(own_anchor[k])
    # again: records whose trace failed in the share pass fail again (not cached)
    return items, time.time() - t0, comm.sum(traced) + comm.max(again)


def batch_loss_grad(comm, heads, per, args):
    """(loss, gradient, examples, per-example losses) of one optimizer step over
    the records' examples `per` (a list per record, batch order). The weights
    are the whole batch's; the gradient is the sum of per-record gradients in
    batch order (parallel.py: bitwise the same with any number of ranks, rank r
    computing its block of records)."""
    exs = [x for e in per for x in e]
    w = weights_of(exs, args.anchor_weight, args.anchor_count_weight)
    lo, hi = comm.block(len(per))
    mine = []

    def partials():
        for e in per[lo:hi]:
            tot, g, ls = heads.loss_grad(e, w)
            mine.append((tot, ls))
            yield g
    grad = comm.ordered_sum(partials(), heads.n)
    loss, losses = 0.0, []
    for tot, ls in (x for part in comm.allgather(mine) for x in part):
        loss += tot
        losses.extend(ls)
    return loss, grad, exs, losses


def lora_batch_loss_grad(comm, heads, ad, batch, args, times=None):
    """batch_loss_grad of a LoRA step: batch = [(item, choice variant or None)] in
    batch order; each record's gradient is [heads.n + ad.n] (heads then adapters,
    lora.record_loss_grad), summed in batch order like the heads-only step.
    times: a dict given this rank's CPU seconds and fork tokens (record_loss_grad)
    and "records"."""
    per = [item_examples(it, args, var) for it, var in batch]
    exs = [x for e in per for x in e]
    w = weights_of(exs, args.anchor_weight, args.anchor_count_weight)
    lo, hi = comm.block(len(batch))
    mine = []

    def partials():
        for it, var in batch[lo:hi]:
            tot, gh, gl, ls, _ = lora.record_loss_grad(
                heads, ad, it.rec, it.plan, it.base, var, w, args.lora_checkpointing == "on",
                times=times, anchor=it.anchor, anchor_count=args.anchor_count_weight > 0)
            if times is not None:
                times["records"] = times.get("records", 0) + 1
            mine.append((tot, [float(x) for x in ls]))
            yield np.concatenate([gh, gl])
    grad = comm.ordered_sum(partials(), heads.n + ad.n)
    loss, losses = 0.0, []
    for tot, ls in (x for part in comm.allgather(mine) for x in part):
        loss += tot
        losses.extend(ls)
    return loss, grad, exs, losses


def retrace_val(ckpt, items):
    """LoRA: the val items' features (and anchor-mode features) under the current
    adapters (deg_fill's forks; not cached: the adapters change every step)."""
    for it in items:
        it.base = features.extract(ckpt, it.rec)
        if it.anchor is not None:
            it.anchor = features.extract(ckpt, it.rec, anchors=features.anchors_of(
                anchor_gold(it.rec)))


def tensor_slices(meta):
    """name -> (offset, size) in the flat parameter vector (deg.json "heads" is in
    the table order of lib/deg/fill.h)."""
    out, off = {}, 0
    for name, shape in meta["heads"].items():
        n = int(np.prod(shape))
        out[name] = (off, n)
        off += n
    return out


def weights_of(examples, anchor_weight=1.0, anchor_count_weight=0.0):
    """Weight slots of deg_train_loss_grad: the §12.4 sum of means, decide +
    extract + 0.5 count (+ anchor_weight anchor + anchor_count_weight
    anchor_count when anchor examples are present; anchored extracts are extract
    items)."""
    n = [0] * 8
    for x in examples:
        n[x.kind] += 1
    nd = n[0] + n[1] + n[2]
    ne = n[3] + n[7]
    w = [1.0 / nd if nd else 0.0] * 3 + [1.0 / ne if ne else 0.0, 0.5 / n[4] if n[4] else 0.0]
    if n[5] or n[6] or n[7]:
        w += [anchor_weight / n[5] if n[5] else 0.0,
              anchor_count_weight / n[6] if n[6] else 0.0]
    return w


def kind_means(examples, losses):
    s, c = [0.0] * 8, [0] * 8
    for x, l in zip(examples, losses):
        s[x.kind] += float(l)
        c[x.kind] += 1
    return {LOSS_KINDS[k]: s[k] / c[k] for k in range(8) if c[k]}


def item_examples(it, args, variant=None):
    """A usable record's examples: index mode, then (--anchor) anchor mode."""
    exs = data.examples_of(it.rec, it.plan, it.base, variant)
    if it.anchor is not None:
        exs += data.anchor_examples_of(it.rec, it.plan, it.anchor, args.anchor_count_weight > 0)
    return exs


def evaluate(heads, items, args, chunk=64):
    """Mean §12.4 loss over val (decide + extract + 0.5 count (+ anchor terms), each a
    mean) and per kind."""
    exs = [x for it in items for x in item_examples(it, args)]
    if not exs:
        return None, {}
    w = weights_of(exs, args.anchor_weight, args.anchor_count_weight)
    tot, losses = 0.0, []
    for i in range(0, len(exs), chunk * 25):
        part = exs[i:i + chunk * 25]
        t, _, ls = heads.loss_grad(part, w)
        tot += t
        losses.extend(ls)
    return tot, kind_means(exs, losses)


def accuracy(heads, items):
    """Val accuracies from raw logits: decide argmax, extract start+end argmax among
    the positives, count argmax; and the calibration items per kind."""
    cal = {0: [], 1: [], 2: [], 3: []}
    hit, n = [0] * 5, [0] * 5
    for it in items:
        for x in data.examples_of(it.rec, it.plan, it.base):
            lg = heads.logits(x)
            n[x.kind] += 1
            if x.kind in (0, 1, 2):
                hit[x.kind] += int(np.argmax(lg)) == x.gold_line
                cal[x.kind].append((lg, x.gold_line))
            elif x.kind == 3:
                m = lg.shape[0] // 2
                ok = int(np.argmax(lg[:m])) in set(x.pos_start.tolist()) and \
                    int(np.argmax(lg[m:])) in set(x.pos_end.tolist())
                hit[3] += ok
                cal[3].append((lg, x.pos_start, x.pos_end))
            else:
                hit[4] += int(np.argmax(lg)) + x.lo == x.count
    acc = {KINDS[k]: {"accuracy": hit[k] / n[k], "n": n[k]} for k in range(5) if n[k]}
    return acc, cal


def _epoch_dirs(out):
    """state.json of every complete snapshot, oldest first: epoch-NNN (after
    epoch NNN) sorts after epoch-NNN-step-SSSSSS (inside epoch NNN, '-' < '/')."""
    return sorted(glob.glob(os.path.join(out, "epochs", "epoch-*", "state.json")))


def main(argv=None):
    """python -m deg.train [ARGS] (under mpirun -np N: one data-parallel rank; see
    deg/train/parallel.py). Returns the exit code."""
    args = parse_args(argv)
    try:
        comm = parallel.world()
    except parallel.ParallelError as e:
        _log(f"deg.train: {e}", error=True)
        return 2
    global _QUIET
    _QUIET = comm.rank != 0
    if comm.rank:
        args.no_progress = True
    return comm.run(lambda: _main(args, argv, comm))


def _main(args, argv, comm):
    from .._native import lib
    if args.threads:
        lib.deg_set_num_threads(args.threads)
    os.makedirs(args.out, exist_ok=True)
    cache = args.cache or os.path.join(args.out, "cache")
    os.makedirs(cache, exist_ok=True)
    for d in (args.out, cache):
        comm.check_shared_dir(d)
    t_start = time.time()

    # --- data
    by_split, bad, bad_ex = data.read_records(args.data)
    train_recs = data.subsample(by_split["train"], args.max_records, args.seed)
    val_recs = data.subsample(by_split["val"], args.max_val_records, args.seed + 1)

    # --- start checkpoint (random heads, --init, or the newest epoch on --resume)
    resume_state = None
    if args.resume:
        found = _epoch_dirs(args.out)
        if not found:
            _log(f"deg.train: --resume: no epoch checkpoint under {args.out}/epochs; starting fresh")
        else:
            with open(found[-1]) as fh:
                resume_state = json.load(fh)
            diff = [k for k in _RESUME_KEYS
                    if resume_state["args"].get(k, _RESUME_DEFAULTS.get(k)) != getattr(args, k)]
            if diff:
                _log(f"deg.train: --resume: arguments differ from the interrupted run: {diff}",
                     error=True)
                return 2
    if resume_state:
        start_dir = os.path.dirname(found[-1])
        model_path = args.model
    elif args.init:
        start_dir, model_path = args.init, args.model
    else:
        start_dir = os.path.join(args.out, "init")
        if comm.rank == 0:
            create_random_checkpoint(args.model, start_dir, seed=args.seed,
                                     array_mode=args.array_mode or "index",
                                     anchor_min_tokens=args.anchor_min_tokens or 0)
        comm.barrier()
        model_path = args.model
    try:
        ckpt = load(start_dir, model_path=model_path)
    except DegError as e:
        _log(f"deg.train: cannot load {start_dir}: {e}", error=True)
        return 2
    with open(os.path.join(start_dir, "deg.json")) as fh:
        meta = json.load(fh)
    sha = meta["backbone"]["sha256"]
    if "lora" in meta and args.lora_rank is None:
        # the features (and their cache, keyed by the backbone) are the frozen base
        # model's; a checkpoint with adapters (include/lora.h) would run adapted forks
        _log(f"deg.train: the start checkpoint {start_dir} carries LoRA adapters "
             "(deg.json \"lora\"); without --lora-rank deg.train trains heads over "
             "frozen-backbone features, not adapters (pass its --lora-* options to train "
             "both)", error=True)
        return 2
    if args.lora_rank is not None:
        why = _lora_start(ckpt, meta, args)
        if why:
            _log(f"deg.train: {why}", error=True)
            ckpt.close()
            return 2
    for k, v in (("array_mode", args.array_mode), ("anchor_min_tokens", args.anchor_min_tokens)):
        if v is not None and meta.get(k) != v:
            _log(f"deg.train: --{k.replace('_', '-')} {v}: the start checkpoint {start_dir} "
                 f"has {k} {meta.get(k)!r}", error=True)
            return 2
    heads = Heads(ckpt)

    # --- features
    anchor_stats = new_anchor_stats() if args.anchor else None
    val_anchor_stats = new_anchor_stats() if args.anchor else None
    train, t_tr, n_tr = prepare_sharded(comm, train_recs, ckpt, sha, cache, args.variants, bad,
                                        bad_ex, args, "train", anchor_stats)
    val_bad, val_bad_ex = type(bad)(), []
    val, t_va, n_va = prepare_sharded(comm, val_recs, ckpt, sha, cache, 0, val_bad, val_bad_ex,
                                      args, "val", val_anchor_stats)
    traced = n_tr + n_va
    _log(f"deg.train: {len(train)} train / {len(val)} val records usable; bad (file + train) "
         f"{dict(bad)}, bad val {dict(val_bad)}; traced {traced} feature sets in "
         f"{t_tr + t_va:.0f}s")
    report = {"records": {"train_selected": len(train_recs), "train_used": len(train),
                          "val_selected": len(val_recs), "val_used": len(val),
                          "bad": dict(bad), "bad_val": dict(val_bad),
                          "bad_examples": (bad_ex + val_bad_ex)[:50]},
              "features": {"seconds": round(t_tr + t_va, 1), "traced": traced}}
    if args.anchor:
        for st in (anchor_stats, val_anchor_stats):
            st["seconds"] = round(st["seconds"], 1)
        report["anchor"] = {"train": anchor_stats, "val": val_anchor_stats}
        _log(f"deg.train: anchor mode: train {anchor_stats}, val {val_anchor_stats}")
    if comm.size > 1:
        report["parallel"] = {"ranks": comm.size}
    if args.features_only:
        if comm.rank == 0:
            _write_report(args.out, report)
        return 0
    if not train:
        _log("deg.train: no usable train records", error=True)
        return 2

    # --- optimization (LoRA: one vector, the heads then the adapters)
    steps_per_epoch = math.ceil(len(train) / args.batch)
    total = steps_per_epoch * args.epochs
    ad = lora.Adapters(ckpt) if args.lora_rank is not None else None
    nh = heads.n
    opt = AdamW(nh + (ad.n if ad else 0), weight_decay=args.weight_decay)
    params = heads.get() if ad is None else np.concatenate([heads.get(), ad.get()])

    def set_params():
        heads.set(params[:nh])
        if ad is not None:
            ad.set(params[nh:])
    if not resume_state and not args.init and args.extract_init_scale != 1.0:
        for name, (o, n) in tensor_slices(meta).items():
            if name in ("extract.qs", "extract.ks", "extract.qe", "extract.ke"):
                params[o:o + n] *= np.float32(args.extract_init_scale)
        set_params()
    history = []
    lora_times = {}  # LoRA: this rank's CPU seconds per part (not in history: not bitwise)
    first_epoch, first_step, partial = 0, 0, None
    if resume_state:
        with np.load(os.path.join(start_dir, "optim.npz")) as z:
            opt.load(z)
        history = resume_state["history"]
        partial = resume_state.get("partial")  # a step snapshot inside an epoch
        if partial:
            first_epoch, first_step = resume_state["epoch"], partial["steps_done"]
            _log(f"deg.train: resumed inside epoch {first_epoch + 1} after its step "
                 f"{first_step} (step {opt.t})")
        else:
            first_epoch = resume_state["epoch"] + 1
            _log(f"deg.train: resumed after epoch {resume_state['epoch'] + 1} (step {opt.t})")
    t_train = time.time()
    for epoch in range(first_epoch, args.epochs):
        rng = np.random.default_rng([args.seed, epoch])
        perm = rng.permutation(len(train))
        shuffles = rng.random(len(train)) < 0.5
        picks = rng.integers(0, max(args.variants, 1), size=len(train))
        ep_loss, ep_steps, ep_kind = 0.0, 0, {}
        skip = 0
        if partial and epoch == first_epoch:  # the epoch's running sums at the snapshot
            ep_loss, ep_steps, ep_kind = partial["ep_loss"], partial["ep_steps"], partial["ep_kind"]
            skip = first_step
        bar = _bar(range(skip, steps_per_epoch), args, desc=f"epoch {epoch + 1}/{args.epochs}",
                   unit="step")
        for s in bar:
            idx = perm[s * args.batch:(s + 1) * args.batch]
            batch = []  # (item, choice variant) of each record of the batch, in batch order
            for i in idx:
                it = train[i]
                batch.append((it, it.variants[picks[i]] if shuffles[i] and it.variants else None))
            if ad is None:
                per = [item_examples(it, args, var) for it, var in batch]
                loss, grad, exs, losses = batch_loss_grad(comm, heads, per, args)
            else:
                loss, grad, exs, losses = lora_batch_loss_grad(comm, heads, ad, batch, args,
                                                               lora_times)
            if args.clip > 0:
                norm = float(np.sqrt(np.dot(grad.astype(np.float64), grad.astype(np.float64))))
                if norm > args.clip:
                    grad *= np.float32(args.clip / norm)
            lr = lr_at(opt.t, total, args.lr, args.warmup)
            if ad is not None:  # the adapters' own peak lr, same schedule
                lr_l = lr_at(opt.t, total, args.lr if args.lora_lr is None else args.lora_lr,
                             args.warmup)
                lr = np.concatenate([np.full(nh, lr, dtype=np.float32),
                                     np.full(ad.n, lr_l, dtype=np.float32)])
            opt.step(params, grad, lr)
            set_params()
            ep_loss += loss
            ep_steps += 1
            for k, v in kind_means(exs, losses).items():
                ep_kind.setdefault(k, []).append(v)
            if hasattr(bar, "set_postfix"):
                bar.set_postfix(loss=f"{loss:.3f}")
            if args.snapshot_every and opt.t % args.snapshot_every == 0 \
                    and s + 1 < steps_per_epoch and comm.rank == 0:
                _save_epoch(args, heads, opt, epoch, history,
                            partial={"steps_done": s + 1, "ep_loss": ep_loss,
                                     "ep_steps": ep_steps, "ep_kind": ep_kind})
            if args.stop_after_step is not None and opt.t >= args.stop_after_step:
                _log(f"deg.train: stopping after step {opt.t} (--stop-after-step)")
                return 0
        if ad is not None and comm.rank == 0:
            retrace_val(ckpt, val)
        val_loss, val_kind = comm.bcast(evaluate(heads, val, args) if comm.rank == 0 else None)
        rec = {"epoch": epoch + 1, "step": opt.t, "train_loss": ep_loss / max(ep_steps, 1),
               "train_kind": {k: float(np.mean(v)) for k, v in ep_kind.items()},
               "val_loss": val_loss, "val_kind": val_kind}
        history.append(rec)
        _log(f"deg.train: epoch {epoch + 1}: train loss {rec['train_loss']:.4f}, val loss "
             f"{val_loss if val_loss is None else round(val_loss, 4)}")
        if comm.rank == 0:
            _save_epoch(args, heads, opt, epoch, history)
        if args.stop_after_epoch is not None and epoch + 1 >= args.stop_after_epoch:
            _log(f"deg.train: stopping after epoch {epoch + 1} (--stop-after-epoch)")
            return 0
    train_seconds = time.time() - t_train
    if comm.rank != 0:  # rank 0 calibrates and writes the checkpoint
        ckpt.close()
        return 0

    # --- calibration on val (§12.3) and the final checkpoint
    if ad is not None and first_epoch >= args.epochs:  # resumed after the last epoch
        retrace_val(ckpt, val)
    acc_raw, cal = accuracy(heads, val)
    temps = {"choice": 1.0, "score": 1.0, "noul": 1.0, "extract": 1.0, "count": 1.0}
    nll_before, nll_after = {}, {}
    for k in (0, 1, 2, 3):
        if cal[k]:
            nll_before[KINDS[k]] = calibrate.nll(k, cal[k], 1.0)
            temps[KINDS[k]] = calibrate.fit(k, cal[k])
            nll_after[KINDS[k]] = calibrate.nll(k, cal[k], temps[KINDS[k]])
    heads.set_temperatures(temps)
    temps = heads.get_temperatures()  # as stored (fp32)
    last = history[-1] if history else {}
    training = {"command": "python -m deg.train " + " ".join(_argv_for_report(argv)),
                "seed": args.seed, "epochs": args.epochs, "lr": args.lr, "batch": args.batch,
                "warmup": args.warmup, "variants": args.variants,
                "extract_init_scale": args.extract_init_scale,
                "weight_decay": args.weight_decay, "clip": args.clip,
                "train_records": len(train), "val_records": len(val), "ranks": comm.size,
                "final_train_loss": last.get("train_loss"), "final_val_loss": last.get("val_loss")}
    if args.anchor:
        training.update({"anchor": True, "anchor_weight": args.anchor_weight,
                         "anchor_count_weight": args.anchor_count_weight})
    if ad is not None:
        training.update({"lora_rank": args.lora_rank, "lora_alpha": args.lora_alpha,
                         "lora_selector": args.lora_selector, "lora_targets": args.lora_targets,
                         "lora_lr": args.lr if args.lora_lr is None else args.lora_lr})
    heads.save(args.out, extra={"training": training}, backbone_path=not args.no_backbone_path)
    if lora_times.get("records"):
        n = lora_times["records"]
        report["lora_cpu_per_record"] = {
            "records": n, "note": "rank 0's records of this sitting; CPU s (process_time)",
            **{k: round(v / n, 3) for k, v in lora_times.items() if k != "records"}}
    report.update({"history": history, "val_accuracy_raw": acc_raw, "temperatures": temps,
                   "val_nll_T1": nll_before, "val_nll_calibrated": nll_after,
                   "train_seconds": round(train_seconds, 1),
                   "total_seconds": round(time.time() - t_start, 1), "training": training})
    _write_report(args.out, report)
    _log(f"deg.train: wrote {args.out} (temperatures {temps}); val accuracy {acc_raw}")
    ckpt.close()
    return 0


def _lora_start(ckpt, meta, args):
    """Fresh adapters on a start checkpoint without any (B = 0, seeded by --seed), or
    check that the adapters it carries are the --lora-* ones. Returns why not, or None."""
    bits = lora.parse_targets(args.lora_targets)
    e = meta.get("lora")
    if e is None:
        lora.add(ckpt, args.lora_rank, args.lora_alpha, bits, args.lora_selector, args.seed)
        return None
    want = {"rank": args.lora_rank, "alpha": float(np.float32(args.lora_alpha)),
            "targets": sorted(lora.target_names(bits)), "selector": args.lora_selector}
    have = {"rank": e.get("rank"), "alpha": float(np.float32(e.get("alpha", 0))),
            "targets": sorted(e.get("targets") or []), "selector": e.get("selector")}
    diff = [f"{k} {have[k]!r} (--lora-* gives {want[k]!r})" for k in want if have[k] != want[k]]
    if diff:
        return ("the start checkpoint's LoRA adapters differ from the --lora-* options: "
                + ", ".join(diff))
    return None


def _argv_for_report(argv):
    return list(sys.argv[1:] if argv is None else argv)


def _write_report(out, report):
    _atomic_write(os.path.join(out, "train-report.json"),
                  lambda fh: fh.write((json.dumps(report, indent=1, sort_keys=True) + "\n").encode()))


def _save_epoch(args, heads, opt, epoch, history, partial=None):
    """OUT/epochs/epoch-NNN after epoch NNN, or epoch-NNN-step-SSSSSS inside it
    (partial: steps done in the epoch and its running loss sums). Older step
    snapshots of the epoch go once this one is complete."""
    name = f"epoch-{epoch + 1:03d}"
    if partial:
        name += f"-step-{partial['steps_done']:06d}"
    d = os.path.join(args.out, "epochs", name)
    os.makedirs(d, exist_ok=True)
    heads.save(d, extra={"epoch": epoch + 1})
    st = opt.state()
    _atomic_write(os.path.join(d, "optim.npz"), lambda fh: np.savez(fh, **st))
    state = {"epoch": epoch, "step": opt.t, "history": history, "partial": partial,
             "args": {k: getattr(args, k) for k in _RESUME_KEYS},
             "rng": {"kind": "numpy default_rng([seed, epoch]) per epoch", "seed": args.seed,
                     "next_epoch": epoch + 1}}
    # state.json last: an epoch directory without it is incomplete and ignored
    _atomic_write(os.path.join(d, "state.json"),
                  lambda fh: fh.write(json.dumps(state, indent=1).encode()))
    for old in glob.glob(os.path.join(args.out, "epochs", f"epoch-{epoch + 1:03d}-step-*")):
        if old != d:
            shutil.rmtree(old)


if __name__ == "__main__":
    sys.exit(main())
