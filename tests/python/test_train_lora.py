"""deg.train --lora-rank (deg/train/lora.py, §12.7) on the tiny random llama: fresh
adapters (B = 0) start exactly at the init checkpoint (hidden rows, loss and head
gradient bitwise those of the heads-only trainer), a few epochs lower the loss and
move the adapters, the saved checkpoint's own trace (what deg.fill reads) equals
the trainer's forward bitwise, resume is bitwise, 2 MPI ranks equal one process
bitwise, --anchor trains the anchor-mode forks too, and bad options are refused
with a message."""
import json
import os

import numpy as np
import pytest

import deg
from deg.datagen.record import anchor_gold
from deg.train import data, features, lora
from deg.train.cli import main, weights_of
from deg.train.engine import Heads
from test_train import SCHEMA, TINY, _records

LORA = ["--lora-rank", "4", "--lora-alpha", "8", "--lora-lr", "1e-2"]


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    d = tmp_path_factory.mktemp("train-lora")
    path = d / "records.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in _records()) + "\n")
    return d, str(path)


def _argv(dataset, out, *extra, epochs=3):
    d, path = dataset
    return ["--data", path, "--model", TINY, "--out", str(d / out), "--epochs", str(epochs),
            "--batch", "3", "--variants", "1", "--seed", "3", "--warmup", "2", "--lr", "3e-3",
            "--no-progress", "--threads", "1", "--cache", str(d / "cache")] + list(extra)


@pytest.fixture(scope="module")
def heads_run(dataset):
    """A heads-only run: the --init checkpoint of the LoRA runs."""
    assert main(_argv(dataset, "heads", epochs=2)) == 0
    return dataset[0] / "heads"


@pytest.fixture(scope="module")
def lora_run(dataset, heads_run):
    assert main(_argv(dataset, "lora", "--init", str(heads_run), *LORA)) == 0
    return dataset[0] / "lora"


def _bytes(p):
    with open(p, "rb") as fh:
        return fh.read()


def test_fresh_adapters_start_at_the_init_checkpoint(heads_run):
    rec = _records()[5]
    plan = data.check_record(rec)
    ck = deg.load(str(heads_run), model_path=TINY)
    try:
        base = features.extract(ck, rec, tokens=True)  # no adapters yet
        assert base.trunk_ids is not None and base.trunk_ids.shape == (base.n_trunk_tokens,)
        assert base.ctx_first >= 1
        heads = Heads(ck)
        exs = data.examples_of(rec, plan, base)
        w = weights_of(exs)
        tot0, g0, l0 = heads.loss_grad(exs, w)
        lora.add(ck, 4, 8.0, lora.parse_targets("all"), "kind", seed=3)
        ad = lora.Adapters(ck)
        assert ad.config == {"rank": 4, "alpha": 8.0, "targets": 127, "n_adapters": 2}
        exs1, forks = lora.forward(ad, rec, plan, base)
        used = {x.fork for x in exs1}
        assert used
        for u in used:  # B = 0: the adapted forks are bitwise the base ones
            assert np.array_equal(forks[u]["hidden"], base.forks[u]["hidden"])
        tot, gh, gl, ls, _ = lora.record_loss_grad(heads, ad, rec, plan, base, None, w)
        assert tot == tot0 and np.array_equal(gh, g0) and np.array_equal(ls, l0)
        assert gl.shape == (ad.n,) and np.any(gl != 0)  # B = 0 still gets a gradient
        # dL/dA = scale B^T dy x^T is 0 while B = 0; dL/dB is not (A random, B zero)
        p = ad.get()
        assert np.all(gl[p != 0] == 0) and np.count_nonzero(gl[p == 0]) > 0
    finally:
        ck.close()


def test_lora_run_lowers_the_loss_and_saves_adapters(lora_run, heads_run):
    rep = json.loads((lora_run / "train-report.json").read_text())
    hist = rep["history"]
    assert len(hist) == 3
    assert hist[-1]["train_loss"] < 0.9 * hist[0]["train_loss"]
    meta = json.loads((lora_run / "deg.json").read_text())
    e = meta["lora"]
    assert e["rank"] == 4 and e["alpha"] == 8.0 and e["selector"] == "kind"
    assert e["adapters"] == ["decide", "extract"] and len(e["targets"]) == 7
    assert (lora_run / e["file"]).exists()
    assert meta["training"]["lora_rank"] == 4 and meta["training"]["lora_lr"] == 1e-2
    for ep in (1, 2, 3):
        assert (lora_run / "epochs" / f"epoch-{ep:03d}" / "adapters.safetensors").exists()
    ck = deg.load(str(lora_run), model_path=TINY)
    try:
        p = lora.Adapters(ck).get()
        r = deg.fill("Ticket 555 from eva@example.com about billing.", SCHEMA, model=ck)
        assert r["value"]["dept"] in ("billing", "shipping", "other")
    finally:
        ck.close()
    assert np.abs(p).max() > 0
    # the heads moved too (one optimizer over both)
    assert _bytes(lora_run / "heads.safetensors") != _bytes(heads_run / "heads.safetensors")


def test_saved_checkpoint_fills_with_the_trainers_forward(lora_run, dataset):
    rec = _records()[9]  # a val record
    plan = data.check_record(rec)
    ck = deg.load(str(lora_run), model_path=TINY)
    try:
        ad = lora.Adapters(ck)
        toks = features.extract(ck, rec, tokens=True)  # deg_fill's forks, trained adapters
        exs, forks = lora.forward(ad, rec, plan, toks)
        moved = 0
        for u in {x.fork for x in exs}:
            assert np.array_equal(forks[u]["hidden"], toks.forks[u]["hidden"]), forks[u]["pointer"]
        # and they are not the base model's any more
        ad.set(np.zeros(ad.n, dtype=np.float32))
        plain = features.extract(ck, rec)
        for u in {x.fork for x in exs}:
            moved += not np.array_equal(plain.forks[u]["hidden"], toks.forks[u]["hidden"])
        assert moved == len({x.fork for x in exs})
    finally:
        ck.close()


def test_resume_is_bitwise(dataset, heads_run, lora_run):
    d = dataset[0]
    argv = _argv(dataset, "lora-resume", "--init", str(heads_run), *LORA)
    assert main(argv + ["--stop-after-epoch", "1"]) == 0
    assert not (d / "lora-resume" / "deg.json").exists()
    assert main(argv + ["--resume"]) == 0
    for f in ("heads.safetensors", "adapters.safetensors"):
        assert _bytes(d / "lora-resume" / f) == _bytes(lora_run / f), f
    for ep in (2, 3):
        a = np.load(d / "lora-resume" / "epochs" / f"epoch-{ep:03d}" / "optim.npz")
        b = np.load(lora_run / "epochs" / f"epoch-{ep:03d}" / "optim.npz")
        assert all(np.array_equal(a[k], b[k]) for k in ("m", "v", "t"))
    h1 = json.loads((d / "lora-resume" / "train-report.json").read_text())["history"]
    h2 = json.loads((lora_run / "train-report.json").read_text())["history"]
    assert h1 == h2
    # resuming with other LoRA options is refused
    assert main(argv[:-len(LORA)] + ["--lora-rank", "2", "--resume"]) == 2


def test_resume_inside_an_epoch_is_bitwise(dataset, heads_run, lora_run):
    """--snapshot-every 1: a run killed inside epoch 2 resumes from its newest step
    snapshot and ends bitwise as the uninterrupted run; one step snapshot is kept per
    epoch and an epoch's end removes them."""
    d = dataset[0]
    argv = _argv(dataset, "lora-steps", "--init", str(heads_run), *LORA) + ["--snapshot-every", "1"]
    spe = json.loads((lora_run / "train-report.json").read_text())["history"][0]["step"]
    assert spe >= 2  # steps per epoch: the stop below lands inside epoch 2
    assert main(argv + ["--stop-after-step", str(spe + 1)]) == 0
    snaps = sorted(p.name for p in (d / "lora-steps" / "epochs").iterdir())
    assert snaps == ["epoch-001", "epoch-002-step-000001"], snaps
    state = json.loads((d / "lora-steps" / "epochs" / snaps[-1] / "state.json").read_text())
    assert state["epoch"] == 1 and state["step"] == spe + 1 and state["partial"]["steps_done"] == 1
    assert main(argv + ["--resume"]) == 0
    for f in ("heads.safetensors", "adapters.safetensors"):
        assert _bytes(d / "lora-steps" / f) == _bytes(lora_run / f), f
    h1 = json.loads((d / "lora-steps" / "train-report.json").read_text())["history"]
    h2 = json.loads((lora_run / "train-report.json").read_text())["history"]
    assert h1 == h2
    assert sorted(p.name for p in (d / "lora-steps" / "epochs").iterdir()) == [
        "epoch-001", "epoch-002", "epoch-003"]
    with pytest.raises(SystemExit) as e:
        main(argv + ["--snapshot-every", "-1"])
    assert e.value.code == 2


def test_mpi_two_ranks_equal_one_process(dataset, heads_run, lora_run):
    from test_train_mpi import _mpi_missing, mpirun
    why = _mpi_missing()
    if why:
        if os.environ.get("CI") == "true":
            pytest.fail(f"CI must run the MPI tests: {why}")
        pytest.skip(why)
    d = dataset[0]
    mpirun(2, "-m", "deg.train", *_argv(dataset, "lora-mpi", "--init", str(heads_run), *LORA))
    for f in ("heads.safetensors", "adapters.safetensors"):
        assert _bytes(d / "lora-mpi" / f) == _bytes(lora_run / f), f
    a = np.load(d / "lora-mpi" / "epochs" / "epoch-003" / "optim.npz")
    b = np.load(lora_run / "epochs" / "epoch-003" / "optim.npz")
    assert all(np.array_equal(a[k], b[k]) for k in ("m", "v", "t"))
    h1 = json.loads((d / "lora-mpi" / "train-report.json").read_text())["history"]
    h2 = json.loads((lora_run / "train-report.json").read_text())["history"]
    assert h1 == h2


@pytest.mark.parametrize("extra, msg", [
    (["--lora-alpha", "4"], "--lora-alpha needs --lora-rank"),
    (["--lora-rank", "0"], "--lora-rank must be in [1, 256]"),
    (["--lora-rank", "300"], "--lora-rank must be in [1, 256]"),
    (["--lora-rank", "4", "--lora-alpha", "nan"], "--lora-alpha must be a finite number > 0"),
    (["--lora-rank", "4", "--lora-lr", "-1"], "--lora-lr must be a finite number >= 0"),
    (["--lora-rank", "4", "--lora-targets", "q,qkv"], "unknown LoRA target 'qkv'"),
])
def test_bad_lora_options_are_refused(dataset, capsys, extra, msg):
    with pytest.raises(SystemExit) as e:
        main(_argv(dataset, "bad", *extra))
    assert e.value.code == 2
    assert msg in capsys.readouterr().err


def test_init_with_other_adapters_is_refused(dataset, lora_run, capsys):
    assert main(_argv(dataset, "other", "--init", str(lora_run), "--lora-rank", "2",
                      "--epochs", "1")) == 2
    assert "rank 4 (--lora-* gives 2)" in capsys.readouterr().err
    # the same options continue its adapters
    assert main(_argv(dataset, "same", "--init", str(lora_run), *LORA, epochs=1)) == 0


def test_anchor_mode_forks_train_too(dataset, heads_run):
    d = dataset[0]
    out = d / "lora-anchor"
    assert main(_argv(dataset, "lora-anchor", "--init", str(heads_run), "--anchor",
                      "--anchor-count-weight", "0.5", *LORA)) == 0
    hist = json.loads((out / "train-report.json").read_text())["history"]
    first, last = hist[0]["train_kind"], hist[-1]["train_kind"]
    for k in ("anchor", "anchor_count", "extract_anchored"):
        assert k in first and k in last, k
    assert hist[-1]["train_loss"] < 0.9 * hist[0]["train_loss"]
    # the saved checkpoint's anchor-mode trace (deg_fill's anchored forks, trained
    # adapters) is the trainer's forward, bitwise
    rec = next(r for r in _records() if r["split"] == "val" and r["value"]["parts"])
    plan = data.check_record(rec)
    ck = deg.load(str(out), model_path=TINY)
    try:
        ad = lora.Adapters(ck)
        base = features.extract(ck, rec, tokens=True)
        anc = features.extract(ck, rec, anchors=features.anchors_of(anchor_gold(rec)),
                               tokens=True)
        exs, forks = lora.forward(ad, rec, plan, base, anchor=anc, anchor_count=True)
        n1 = len(base.forks)
        kinds = {x.kind for x in exs if x.fork >= n1}
        assert {data.ANCHOR, data.ANCHOR_COUNT, data.EXTRACT_ANCHORED} <= kinds
        for u in {x.fork for x in exs}:
            want = base.forks[u] if u < n1 else anc.forks[u - n1]
            assert np.array_equal(forks[u]["hidden"], want["hidden"]), want["pointer"]
    finally:
        ck.close()


def test_lora_target_names():
    """The --lora-targets names: "all" is the attention and MLP projections only;
    the recurrent layers' own projections are named (rec_in, rec_z, rec_out)."""
    from deg._native import lib
    assert lora.parse_targets("all") == lib.DEG_LORA_ALL == 127
    bits = lora.parse_targets("rec_in, rec_z,rec_out")
    assert bits == lib.DEG_LORA_ALL_RECURRENT == 128 | 256 | 512
    assert lora.target_names(bits | lib.DEG_LORA_Q) == ["q", "rec_in", "rec_z", "rec_out"]
