"""Data-parallel deg.train over MPI (deg/train/parallel.py): `mpirun -np N python -m
deg.train` on the tiny smoke configuration of test_train.py, 2 and 3 ranks on this
machine over loopback TCP, gives bitwise the heads, optimizer state, history and
feature cache of one process on the same data; resume under MPI equals the
uninterrupted run; the ordered sum equals the one-process sum where a reduction
tree would not. Skipped when mpirun (Open MPI) or mpi4py is missing, except under
CI=true, where that is a failure (.ci/deps-apt.txt and deps-pip.txt install them)."""
import json
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest

from deg.train import parallel
from deg.train.cli import main
from test_train import TINY, _records

# loopback only: the byte transfer layer over TCP on lo (and self), the
# run-time's out-of-band channel on lo too
MPIRUN_OPTS = ["--oversubscribe", "--mca", "btl", "self,tcp", "--mca", "btl_tcp_if_include",
               "lo", "--mca", "oob_tcp_if_include", "lo"]


def _mpi_missing():
    exe = shutil.which("mpirun")
    if not exe:
        return "mpirun not found (Debian: apt-get install openmpi-bin libopenmpi-dev)"
    ver = subprocess.run([exe, "--version"], capture_output=True, text=True, timeout=60)
    if "Open MPI" not in ver.stdout + ver.stderr:
        return f"{exe} is not Open MPI's mpirun (the test passes Open MPI options)"
    try:
        import mpi4py  # noqa: F401
    except ImportError:
        return "mpi4py is not installed (pip install mpi4py)"
    return None


@pytest.fixture(scope="module")
def mpi():
    why = _mpi_missing()
    if why:
        if os.environ.get("CI") == "true":
            pytest.fail(f"CI must run the MPI tests: {why}")
        pytest.skip(why)


def mpirun(n, *args, check=True):
    env = dict(os.environ)
    if os.geteuid() == 0:  # CI runs as root; Open MPI refuses that unless told
        env.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    res = subprocess.run(["mpirun", "-np", str(n), *MPIRUN_OPTS, sys.executable, *map(str, args)],
                         capture_output=True, text=True, env=env, timeout=300)
    if check and res.returncode != 0:
        raise AssertionError(f"mpirun -np {n} exited {res.returncode}:\n{res.stdout}\n{res.stderr}")
    return res


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    d = tmp_path_factory.mktemp("train-mpi")
    path = d / "records.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in _records()) + "\n")
    return d, str(path)


def _args(dataset, out, cache, *extra):
    d, path = dataset
    return ["--data", path, "--model", TINY, "--out", str(d / out), "--epochs", "3",
            "--batch", "5", "--variants", "1", "--seed", "3", "--warmup", "2", "--lr", "3e-3",
            "--no-progress", "--threads", "1", "--cache", str(d / cache)] + list(extra)


def _train_mpi(n, dataset, out, cache, *extra):
    return mpirun(n, "-m", "deg.train", *_args(dataset, out, cache, *extra))


@pytest.fixture(scope="module")
def single(dataset):
    """One process. 8 train records, batch 5: steps of 5 and 3 records, so 2 ranks
    hold blocks of 3 + 2 and 2 + 1 records, 3 ranks 2 + 2 + 1 and 1 + 1 + 1; with
    2 + 2 or more a per-rank sum + all-reduce associates differently."""
    assert main(_args(dataset, "single", "single-cache")) == 0
    return dataset[0] / "single"


def _bytes(p):
    with open(p, "rb") as fh:
        return fh.read()


def _report(out):
    return json.loads((out / "train-report.json").read_text())


def _same_run(a, b):
    assert _bytes(a / "heads.safetensors") == _bytes(b / "heads.safetensors")
    for e in (1, 2, 3):
        name = f"epochs/epoch-{e:03d}/optim.npz"
        with np.load(a / name) as za, np.load(b / name) as zb:
            assert np.array_equal(za["m"], zb["m"]) and np.array_equal(za["v"], zb["v"])
            assert int(za["t"]) == int(zb["t"])
    ra, rb = _report(a), _report(b)
    assert ra["history"] == rb["history"]
    assert ra["temperatures"] == rb["temperatures"]
    assert ra["records"] == rb["records"]


def test_two_ranks_equal_one_process(mpi, dataset, single):
    res = _train_mpi(2, dataset, "mpi2", "mpi2-cache")
    out = dataset[0] / "mpi2"
    _same_run(single, out)
    # each rank traced its share into one fresh cache: the same files, the same bytes
    c1, c2 = dataset[0] / "single-cache", dataset[0] / "mpi2-cache"
    names = sorted(p.name for p in c1.iterdir())
    assert names == sorted(p.name for p in c2.iterdir()) and len(names) == 19
    assert all(_bytes(c1 / n) == _bytes(c2 / n) for n in names)
    assert _report(out)["features"]["traced"] == _report(single)["features"]["traced"] == 19
    assert _report(out)["parallel"] == {"ranks": 2} and "parallel" not in _report(single)
    meta = json.loads((out / "deg.json").read_text())
    assert meta["training"]["ranks"] == 2
    # only rank 0 logs
    assert res.stderr.count("deg.train: epoch 1:") == 1, res.stderr
    assert res.stderr.count("deg.train: wrote") == 1


def test_three_ranks_from_the_shared_cache(mpi, dataset, single):
    """3 ranks over the cache the single run filled (nothing traced again)."""
    _train_mpi(3, dataset, "mpi3", "single-cache")
    _same_run(single, dataset[0] / "mpi3")
    assert _report(dataset[0] / "mpi3")["features"]["traced"] == 0


def test_resume_under_mpi_equals_uninterrupted(mpi, dataset, single):
    out = dataset[0] / "mpi-resume"
    _train_mpi(2, dataset, "mpi-resume", "single-cache", "--stop-after-epoch", "1")
    assert not (out / "heads.safetensors").exists() and (out / "epochs" / "epoch-001").is_dir()
    assert not (out / "epochs" / "epoch-002").exists()
    res = _train_mpi(2, dataset, "mpi-resume", "single-cache", "--resume")
    assert res.stderr.count("resumed after epoch 1") == 1
    _same_run(single, out)
    # other hyperparameters: refused on every rank, the job exits non-zero
    bad = mpirun(2, "-m", "deg.train", *_args(dataset, "mpi-resume", "single-cache", "--resume",
                                               "--seed", "4"), check=False)
    assert bad.returncode != 0 and "arguments differ" in bad.stderr


def test_anchor_mode_two_ranks_equal_one_process(mpi, dataset):
    """--anchor: the anchor traces are sharded too; counts as one process's."""
    extra = ("--anchor", "--anchor-count-weight", "0.5", "--epochs", "1")
    assert main(_args(dataset, "anc-single", "anc-single-cache", *extra)) == 0
    _train_mpi(2, dataset, "anc-mpi", "anc-mpi-cache", *extra)
    a, b = dataset[0] / "anc-single", dataset[0] / "anc-mpi"
    assert _bytes(a / "heads.safetensors") == _bytes(b / "heads.safetensors")
    ra, rb = _report(a), _report(b)
    assert ra["history"] == rb["history"] and "anchor" in ra["history"][0]["train_kind"]
    for split in ("train", "val"):
        sa, sb = (dict(r["anchor"][split]) for r in (ra, rb))
        del sa["seconds"], sb["seconds"]
        assert sa == sb and sa["traced"] > 0


ORDERED_SUM = """
import sys
import numpy as np
from deg.train import parallel
comm = parallel.world()
assert isinstance(comm, parallel.Mpi) and comm.size == int(sys.argv[1])
out = []
for k in (7, 2):
    parts = np.load(sys.argv[2])[:k]
    lo, hi = comm.block(k)
    out.append(comm.ordered_sum(list(parts[lo:hi]), parts.shape[1]))
    assert comm.allgather((lo, hi)) == [parallel._block(k, r, comm.size) for r in range(comm.size)]
if comm.rank == comm.size - 2:  # not the broadcasting rank
    np.save(sys.argv[3], np.stack(out))
"""


def test_ordered_sum_is_the_one_process_sum(mpi, tmp_path):
    rng = np.random.default_rng(5)
    # magnitudes 1e-6 .. 1e6 with cancellations: the association order shows in the bits
    parts = (rng.normal(size=(7, 4096)) * 10.0 ** rng.integers(-6, 7, size=(7, 4096)))
    parts = parts.astype(np.float32)
    np.save(tmp_path / "parts.npy", parts)
    mpirun(3, "-c", ORDERED_SUM, 3, tmp_path / "parts.npy", tmp_path / "out.npy")
    got = np.load(tmp_path / "out.npy")
    local = parallel.Local()
    for row, k in zip(got, (7, 2)):
        want = local.ordered_sum(list(parts[:k]), 4096)
        assert row.dtype == np.float32 and np.array_equal(row, want)
    # what a per-rank sum + all-reduce (blocks 3 + 2 + 2) would give: other bits
    tree = sum((local.ordered_sum(list(parts[lo:hi]), 4096)
                for lo, hi in (parallel._block(7, r, 3) for r in range(3))),
               np.zeros(4096, np.float32))
    assert not np.array_equal(tree, got[0])


# ---- without MPI (always run) ----

def test_blocks_and_local_sum():
    assert [parallel._block(8, r, 3) for r in range(3)] == [(0, 3), (3, 6), (6, 8)]
    assert [parallel._block(2, r, 3) for r in range(3)] == [(0, 1), (1, 2), (2, 2)]
    assert parallel._block(5, 0, 1) == (0, 5)
    loc = parallel.Local()
    a = np.array([1e8, 1.0, -1e8], dtype=np.float32)
    parts = [a[:1], a[1:2], a[2:]]
    assert loc.ordered_sum(parts, 1).tolist() == [0.0]  # ((0 + 1e8) + 1) - 1e8: 1 is lost
    with pytest.raises(ValueError, match="expected"):
        loc.ordered_sum([np.zeros(2, np.float64)], 2)
    assert loc.share([1, 2, 3]) == [1, 2, 3] and loc.allgather(4) == [4]


def test_world_outside_mpirun_and_without_mpi4py(monkeypatch, dataset):
    for k in parallel.SIZE_VARS:
        monkeypatch.delenv(k, raising=False)
    assert isinstance(parallel.world(), parallel.Local)
    assert parallel.launched_size({"OMPI_COMM_WORLD_SIZE": "1"}) == 1
    assert parallel.launched_size({"PMI_SIZE": "4"}) == 4
    with pytest.raises(parallel.ParallelError, match="not a rank count"):
        parallel.launched_size({"OMPI_COMM_WORLD_SIZE": "x"})
    # outside mpirun deg.train never imports mpi4py
    code = ("import sys; from deg.train import parallel; parallel.world(); "
            "import deg.train.cli; assert 'mpi4py' not in sys.modules")
    env = {k: v for k, v in os.environ.items() if k not in parallel.SIZE_VARS}
    subprocess.run([sys.executable, "-c", code], check=True, env=env, timeout=120)
    # launched with 2 ranks but no mpi4py: a clear error, exit 2, nothing written
    monkeypatch.setenv("OMPI_COMM_WORLD_SIZE", "2")
    monkeypatch.setitem(sys.modules, "mpi4py", None)
    with pytest.raises(parallel.ParallelError, match="mpi4py cannot be imported"):
        parallel.world()
    assert main(_args(dataset, "no-mpi4py", "no-mpi4py-cache")) == 2
    assert not (dataset[0] / "no-mpi4py").exists()


WRITER = """
import sys
import numpy as np
from deg.train.features import Features
fill = float(sys.argv[2])
f = Features(np.full((64, 32), fill, np.float32), np.zeros((64, 2), np.int64),
             [{"pointer": "/a", "mode": "count", "index": 0, "hidden": np.ones((3, 32), np.float32),
               "order": None, "count_lo": 0, "count_hi": 4, "count_gold": 1, "n_tokens": 3}], 64)
for _ in range(int(sys.argv[3])):
    f.save(sys.argv[1])
"""


def test_feature_cache_concurrent_writers(tmp_path):
    """Ranks may trace the same (record, variant) (duplicate records): two processes
    rewriting one cache entry while a third reads it; every read is a whole file
    (writes are temp file + rename)."""
    from deg.train.features import Features
    path = str(tmp_path / "entry.npz")
    procs = [subprocess.Popen([sys.executable, "-c", WRITER, path, "1.5", "60"])
             for _ in range(2)]
    reads = 0
    try:
        while any(p.poll() is None for p in procs):
            if os.path.exists(path):
                f = Features.load(path)
                assert f.ctx.shape == (64, 32) and np.all(f.ctx == 1.5)
                assert f.forks[0]["hidden"].shape == (3, 32) and f.n_trunk_tokens == 64
                reads += 1
    finally:
        for p in procs:
            assert p.wait(timeout=120) == 0
    assert reads > 0 and os.listdir(tmp_path) == ["entry.npz"]  # no temp file left
