"""The same seed gives the same fleet artifact bytes from the C API and from
Python (issue 17, "The fleet training loop's draws in C"): tools/deg-fleet-train
(a C program on include/cartridge.h's public fleet functions only) against
deg.Fleet.init + deg.fleets.train on the tiny qwen3 model, with rotation,
co-loaded rounds and both schedules; then Python resumes a fleet C trained
and ends where one Python run ends. The C program is built with the library's
Meson build (build-tests/ by scripts/run-tests; or give its path in
$DEG_FLEET_TRAIN)."""
import os
import subprocess

import pytest

import deg
from deg import fleets

from conftest import ROOT, built_tool, needs

pytestmark = needs("deg_fleet_train_round", "deg_fleet_draw")

TINY = ROOT / "tests" / "goldens" / "tiny-qwen3"
DOCS = [
    ("keeper.txt", "The lighthouse keeper logs the weather every evening at six. " * 5),
    ("bread.txt", "Sourdough needs a starter fed with flour and water each day. " * 4),
    ("search.txt", "A binary search halves the interval at every comparison it makes. " * 6),
    ("ice.txt", "Glaciers carve valleys shaped like the letter U over millennia. " * 3),
]
FLEET = dict(budget=3, rotate_every=2, warmup_steps=2, lr=5e-3)
STUDY = dict(chunk_min=8, chunk_max=16, max_q=4, max_a=6)


def _tool():
    return built_tool("deg-fleet-train", "DEG_FLEET_TRAIN")


def _files(tmp_path):
    out = []
    for name, text in DOCS:
        p = tmp_path / name
        p.write_text(text)
        out.append(p)
    return out


def _c_train(out, files, rounds, fleet=FLEET, **kw):
    opts = dict(p=4, rounds=rounds, budget=fleet["budget"], rotate_every=fleet["rotate_every"],
                warmup=fleet["warmup_steps"], lr=fleet["lr"], **STUDY, **kw)
    args = [_tool(), str(TINY), str(out)]
    for k, v in opts.items():
        args += ["--" + k.replace("_", "-"), str(v)]
    r = subprocess.run(args + [str(f) for f in files], capture_output=True, text=True,
                       timeout=600, env=dict(os.environ, OMP_WAIT_POLICY="passive"))
    assert r.returncode == 0, r.stderr
    rows = []
    for line in r.stdout.splitlines():  # "round R target T parts A,B loss X"
        w = line.split()
        rows.append((int(w[1]), int(w[3]), [int(x) for x in w[5].split(",")], float(w[7])))
    return rows


def _artifacts(d):
    names = ["fleet.json"] + sorted("docs/" + p.name for p in (d / "docs").iterdir())
    return {n: (d / n).read_bytes() for n in names}


@pytest.mark.parametrize("schedule,seed,p_iso,fleet", [
    ("length", 5, 0.5, FLEET), ("uniform", 2, 0.3, FLEET),
    # budget 2, no periodic rotation: the uniform rule rotates before a round
    ("uniform", 4, 0.3, dict(FLEET, budget=2, rotate_every=0))])
def test_c_and_python_write_the_same_fleet(tmp_path, schedule, seed, p_iso, fleet):
    files = _files(tmp_path)
    kw = dict(accum=2, p_iso=p_iso, distract_max=2, seed=seed, schedule=schedule)
    c_rows = _c_train(tmp_path / "c", files, 6, fleet, **kw)
    py = tmp_path / "py"
    with deg.load_model(TINY) as m:
        deg.Fleet.init(m, py, [(str(f), f.read_bytes()) for f in files], p=4)
        with deg.Fleet.open(m, py, **fleet) as f:
            infos = fleets.train(f, 6, **kw, **STUDY)
            steps = [d.steps for d in f.docs()]
            if schedule == "uniform":  # the rule (include/cartridge.h)
                assert max(steps) - min(steps) <= 1 and min(steps) >= 1, steps
    assert [(i.round, i.target, i.parts) for i in infos] == [r[:3] for r in c_rows]
    assert [i.loss for i in infos] == pytest.approx([r[3] for r in c_rows], abs=2e-6)
    assert any(len(i.parts) > 1 for i in infos) and any(len(i.parts) == 1 for i in infos)
    c_art, py_art = _artifacts(tmp_path / "c"), _artifacts(py)
    assert sorted(c_art) == sorted(py_art) and len(c_art) == 1 + 2 * len(DOCS)
    for name in c_art:
        assert c_art[name] == py_art[name], name


def test_python_resumes_a_fleet_c_trained(tmp_path):
    """3 rounds in C, then 3 more in Python on the same directory = 6 rounds
    in Python alone (the draws depend on the seed and the saved round count)."""
    files = _files(tmp_path)
    kw = dict(accum=1, p_iso=0.5, distract_max=2, seed=9, schedule="length")
    _c_train(tmp_path / "mixed", files, 3, **kw)
    alone = tmp_path / "alone"
    with deg.load_model(TINY) as m:
        with deg.Fleet.open(m, tmp_path / "mixed", **FLEET) as f:
            assert f.rounds == 3
            fleets.train(f, 3, **kw, **STUDY)
        deg.Fleet.init(m, alone, [(str(f), f.read_bytes()) for f in files], p=4)
        with deg.Fleet.open(m, alone, **FLEET) as f:
            fleets.train(f, 6, **kw, **STUDY)
    assert _artifacts(tmp_path / "mixed") == _artifacts(alone)


@pytest.mark.parametrize("args,msg", [
    (["--p", "x"], "--p 'x' is not a count"),
    (["--p", "-3"], "--p '-3' is not a count"),
    (["--lr", "1e-2x"], "--lr '1e-2x' is not a number"),
    (["--rounds", "2.5"], "--rounds '2.5' is not an integer"),
    (["--rounds"], "--rounds needs a value"),
    (["--schedule", "bogus"], "--schedule 'bogus' is not length or uniform"),
    (["--nope", "1"], "unknown option --nope"),
])
def test_tool_refuses_bad_options(tmp_path, args, msg):
    """tools/tool_args.h: a bad option is a usage error (exit 2) that names it, before any
    model is loaded or file written (was: atoi/strtof read 'x' as 0)."""
    r = subprocess.run([_tool(), str(TINY), str(tmp_path / "f")] + args, capture_output=True,
                       text=True, timeout=60)
    assert r.returncode == 2 and r.stderr == f"deg-fleet-train: {msg}\n", r.stderr
    assert not (tmp_path / "f").exists()
