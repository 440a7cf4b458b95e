"""The same seed gives the same cartridge artifact bytes from the C API and
from Python (issue 17, "Self-study in C"): tools/deg-selfstudy-train (a C
program calling include/cartridge.h's self-study functions only) against
deg.selfstudy.train on the tiny qwen3 model. The C program is built with the
library's Meson build (build-tests/ by scripts/run-tests; or give its path
in $DEG_SELFSTUDY_TRAIN)."""
import os
import subprocess
import warnings

import pytest

import deg
from deg import selfstudy as ss

from conftest import ROOT, built_tool, needs

pytestmark = needs("deg_selfstudy_run_new", "deg_corpus_new")

TINY = ROOT / "tests" / "goldens" / "tiny-qwen3"
TEXT = ("The quick brown fox jumps over the lazy dog. Pack my box with five dozen liquor "
        "jugs. How vexingly quick daft zebras jump! Sphinx of black quartz, judge my vow. "
        "The five boxing wizards jump quickly. ") * 4
PARAS = ("Alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu nu xi.\n\n"
         "Is this a question about the paragraph above?\n\n"
         "Rho sigma tau upsilon phi chi psi omega and then the alphabet starts over.\n\n") * 2
SMALL = dict(chunk_min=24, chunk_max=48, max_q=6, max_a=8)


def _tool():
    return built_tool("deg-selfstudy-train", "DEG_SELFSTUDY_TRAIN")


def _c_train(tmp_path, out, files, **kw):
    args = [_tool(), str(TINY), str(out)]
    for k, v in kw.items():
        args += ["--" + k.replace("_", "-"), str(int(v) if isinstance(v, bool) else v)]
    r = subprocess.run(args + [str(f) for f in files], capture_output=True, text=True,
                       timeout=600, env=dict(os.environ, OMP_WAIT_POLICY="passive"))
    assert r.returncode == 0, r.stderr
    return [float(line.split()[-1]) for line in r.stdout.splitlines()]


@pytest.mark.parametrize("case", ["one_document", "mixed_kinds_unpacked", "cover_recall"])
def test_c_and_python_write_the_same_artifact(tmp_path, case):
    doc, paras = tmp_path / "doc.txt", tmp_path / "paras.txt"
    doc.write_text(TEXT)
    paras.write_text(PARAS)
    if case == "one_document":
        files, kw = [doc], dict(p=12, steps=2, accum=2, gen_batch=3, epochs=2, seed=4, **SMALL)
    elif case == "cover_recall":
        files, kw = [doc], dict(p=12, steps=3, accum=2, gen_batch=3, epochs=2, seed=4,
                                recall=1.0, placement="cover", **SMALL)
    else:
        files, kw = [doc, paras], dict(p=16, steps=3, accum=2, gen_batch=1, epochs=2, seed=7,
                                       recall=0.25, passage_qa=0.5, pack=False, lr=1e-2,
                                       **SMALL)
    c_out, py_out = tmp_path / "c.safetensors", tmp_path / "py.safetensors"
    c_losses = _c_train(tmp_path, c_out, files, **kw)
    with deg.load_model(TINY) as m:
        rep = ss.train(m, [str(f) for f in files], save=py_out, **kw)
        mix = {k: kw[k] for k in ("recall", "passage_qa", "placement") if k in kw}
        study = ss.SelfStudy(m, ss.load_corpus(m, [str(f) for f in files]), seed=kw["seed"],
                             **mix, **SMALL)
        kinds = {c.seed_type for c in study.generate(kw["steps"] * kw["accum"])}
    assert len(c_losses) == rep.steps == kw["steps"] * kw["epochs"]
    assert c_losses == pytest.approx(rep.losses, abs=2e-6)
    assert c_out.read_bytes() == py_out.read_bytes()
    if case == "mixed_kinds_unpacked":  # the run did exercise every kind of conversation
        assert "recall" in kinds and "passage_qa" in kinds and kinds - {"recall", "passage_qa"}



@pytest.mark.parametrize("args,code,msg", [
    (["--steps", "2.5", "doc.txt"], 2, "--steps '2.5' is not an integer"),
    (["--seed", "-1", "doc.txt"], 2, "--seed '-1' is not a count"),
    (["--recall", "nan", "doc.txt"], 2, "--recall 'nan' is not a number"),
    (["--placement", "stratified", "doc.txt"], 2,
     "--placement 'stratified' is neither random nor cover"),
    (["--steps", "1", "missing.txt"], 1, "cannot read {tmp}/missing.txt"),
])
def test_tool_refuses_bad_arguments(tmp_path, args, code, msg):
    """tools/tool_args.h: bad options exit 2, an unreadable document 1, each with a
    message naming it, and no cartridge written."""
    (tmp_path / "doc.txt").write_text(TEXT)
    args = [str(tmp_path / a) if a.endswith(".txt") else a for a in args]
    out = tmp_path / "c.safetensors"
    r = subprocess.run([_tool(), str(TINY), str(out)] + args, capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == code, r.stderr
    assert r.stderr == "deg-selfstudy-train: " + msg.format(tmp=tmp_path) + "\n"
    assert not out.exists()

def test_cartridges_is_a_deprecated_alias():
    import importlib
    import sys
    sys.modules.pop("deg.cartridges", None)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        mod = importlib.import_module("deg.cartridges")
    assert mod is ss
    assert any(issubclass(x.category, DeprecationWarning) and "deg.selfstudy" in str(x.message)
               for x in w)
