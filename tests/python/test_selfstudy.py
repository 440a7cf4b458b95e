"""Self-study (deg.selfstudy) and `deg cartridge` on the tiny random models of
tests/goldens (always run), plus one real-model smoke test (skipped without
the model)."""
import math
import os
from pathlib import Path

import pytest

import deg
from deg import selfstudy as cs

from conftest import ROOT, needs, run_cli

pytestmark = needs("deg_tokenize", "deg_detokenize", "deg_chat_format", "deg_forks_generate",
                   "deg_cartridge_init_corpus")

TINY = ROOT / "tests" / "goldens" / "tiny-qwen3"
TEXT = ("The quick brown fox jumps over the lazy dog. Pack my box with five dozen liquor "
        "jugs. How vexingly quick daft zebras jump! Sphinx of black quartz, judge my vow. "
        "The five boxing wizards jump quickly. ") * 4
SMALL = dict(chunk_min=24, chunk_max=48, max_q=6, max_a=8)


@pytest.fixture(scope="module")
def tiny():
    m = deg.load_model(TINY)
    yield m
    m.close()


@pytest.fixture
def corpus_file(tmp_path):
    p = tmp_path / "doc.txt"
    p.write_text(TEXT)
    return p


def test_corpus_multi_document_provenance(tiny, tmp_path):
    d = tmp_path / "docs"
    d.mkdir()
    (d / "a.txt").write_text("alpha " * 30)
    (d / "b.txt").write_text("beta " * 30)
    c = cs.load_corpus(tiny, [d])
    assert [Path(x.name).name for x in c.documents] == ["a.txt", "b.txt"]
    assert c.documents[0].end == c.documents[1].first and c.documents[1].end == len(c)
    assert "Document: " + str(d / "a.txt") in c.text
    assert c.sources(0, 1) == [str(d / "a.txt")]
    assert c.sources(0, len(c)) == [str(d / "a.txt"), str(d / "b.txt")]


def test_bad_corpus_inputs(tiny, tmp_path):
    empty = tmp_path / "empty.txt"
    empty.write_text("  \n")
    with pytest.raises(deg.ArgumentError, match="empty"):
        cs.load_corpus(tiny, [empty])
    binary = tmp_path / "bin.dat"
    binary.write_bytes(b"ELF\0\1\2\3")
    with pytest.raises(deg.FormatError, match="binary"):
        cs.load_corpus(tiny, [binary])
    latin = tmp_path / "latin1.txt"
    latin.write_bytes("caf\xe9".encode("latin-1"))
    with pytest.raises(deg.FormatError, match="UTF-8"):
        cs.load_corpus(tiny, [latin])
    with pytest.raises(deg.DegIOError, match="does not exist"):
        cs.load_corpus(tiny, [tmp_path / "missing.txt"])
    short = tmp_path / "short.txt"
    short.write_text("just a few words")
    with pytest.raises(deg.RangeError, match="fewer than p = 256"):
        cs.train(tiny, [short], p=256, steps=1)


def test_chat_ids_do_not_parse_specials_in_content(tiny):
    ids = cs.chat_ids(tiny, [{"role": "user", "content": "<|im_start|>"}])
    im_start = tiny.tokenize("<|im_start|>", special=True)
    assert len(im_start) == 1
    assert ids.count(im_start[0]) == 2  # the user turn and the assistant turn, not the content


def test_selfstudy_targets(tiny, corpus_file):
    c = cs.load_corpus(tiny, [corpus_file])
    convs = cs.SelfStudy(tiny, c, seed=5, **SMALL).generate(3)
    assert len(convs) == 3
    for v in convs:
        assert v.seed_type in cs.SEED_TYPES
        assert 1 <= v.n_supervised == len(v.answer_ids) <= SMALL["max_a"]
        prompt_len = len(v.student_ids) - len(v.answer_ids)
        pos = {t.position for t in v.targets}
        assert pos == set(range(prompt_len, len(v.student_ids)))
        for t in v.targets:
            assert t.logprob <= 0 and 0 <= t.token < tiny.info.n_vocab
        # per position: at most 20 entries, mass stops at 0.99
        for q in pos:
            ps = sorted((math.exp(t.logprob) for t in v.targets if t.position == q),
                        reverse=True)
            assert len(ps) <= 20 and sum(ps[:-1]) < 0.99


def test_batched_equals_sequential_synthesis(tiny, corpus_file):
    """Rows are batch-invariant: a gen-batch of 3 gives the same conversations
    as three batches of one with the same plan stream."""
    c = cs.load_corpus(tiny, [corpus_file])
    a = cs.SelfStudy(tiny, c, seed=9, **SMALL).generate(3)
    s = cs.SelfStudy(tiny, c, seed=9, **SMALL)
    b = s.generate(1) + s.generate(1) + s.generate(1)
    assert a == b


def test_cover_placement_supervises_every_token(tiny, tmp_path):
    """placement="cover" (deg_selfstudy_placement): one cycle of
    ceil(n / max_a) recall conversations has an answer over every corpus
    token (the answer lies in its chunk, after its prompt), the same seed
    gives the same conversations, and the settings name the placement
    (random's keep their old keys). The spec's random draw leaves the
    corpus's last tokens unsupervised at any count."""
    f = tmp_path / "doc.txt"
    f.write_text("".join(f"Line {i} says {3 * i + 1} apples. " for i in range(12)))
    c = cs.load_corpus(tiny, [f])
    n, ids = len(c), list(c.ids)
    kw = dict(seed=4, recall=1.0, recall_q=(4, 6), **SMALL)
    k = -(-n // SMALL["max_a"])

    def covered(convs):
        got = [0] * n
        for v in convs:
            first, end = v.chunk_span
            at = [a for a in range(first, end - len(v.answer_ids) + 1)
                  if ids[a:a + len(v.answer_ids)] == list(v.answer_ids)
                  and (tiny.detokenize(ids[first:a]).strip().endswith(v.message)
                       or (a == 0 and v.message == "..."))]  # the prompt precedes it
            assert len(at) == 1, (v.chunk_span, at)
            for i in range(at[0], at[0] + len(v.answer_ids)):
                got[i] = 1
        return got

    study = cs.SelfStudy(tiny, c, placement="cover", **kw)
    convs = study.generate(k)
    assert study.n_drawn == k and all(v.seed_type == "recall" for v in convs)
    assert covered(convs) == [1] * n
    assert cs.SelfStudy(tiny, c, placement="cover", **kw).generate(k) == convs
    assert study.settings()["placement"] == "cover"
    spec = cs.SelfStudy(tiny, c, **kw)
    assert "placement" not in spec.settings()
    assert covered(spec.generate(3 * k))[-1] == 0
    with pytest.raises(deg.ArgumentError, match="placement must be one of"):
        cs.SelfStudy(tiny, c, placement="stratified", **kw)


def test_packed_gradient_equals_token_weighted_flat(tiny, corpus_file):
    """packed_backward (one packed pass) and group_backward (weighted
    per-conversation backwards) both == the packed-loss gradient
    sum_c (N_c / N) grad(loss_c) built from unweighted backwards."""
    c = cs.load_corpus(tiny, [corpus_file])
    convs = cs.SelfStudy(tiny, c, seed=11, **SMALL).generate(3)
    cart = deg.Cartridge.from_corpus(tiny, TEXT, 12)
    cart.zero_grads()
    loss = cs.group_backward(cart, convs)
    packed = [cart.grads(layer) for layer in range(tiny.info.n_layer)]
    total = sum(v.n_supervised for v in convs)
    ref = [[[0.0] * len(g) for g in pair] for pair in packed]
    ref_loss = 0.0
    for v in convs:
        cart.zero_grads()
        ref_loss += v.n_supervised / total * cart.backward(v.student_ids, v.targets)
        for layer in range(tiny.info.n_layer):
            for k, g in enumerate(cart.grads(layer)):
                for i, x in enumerate(g):
                    ref[layer][k][i] += v.n_supervised / total * x
    assert loss == pytest.approx(ref_loss, rel=1e-5)
    cart.zero_grads()
    ploss = cs.packed_backward(cart, convs)
    assert ploss == pytest.approx(ref_loss, rel=1e-5)
    one_pass = [cart.grads(layer) for layer in range(tiny.info.n_layer)]
    for pair, rpair in zip(packed + one_pass, ref + ref):
        for g, r in zip(pair, rpair):
            scale = max(abs(x) for x in r)
            assert scale > 0
            assert max(abs(x - y) for x, y in zip(g, r)) <= 1e-5 * scale


def test_train_reproducible_and_reloads(tiny, corpus_file, tmp_path):
    kw = dict(p=12, steps=2, accum=2, gen_batch=3, seed=4, **SMALL)
    a, b = tmp_path / "a.safetensors", tmp_path / "b.safetensors"
    ra = cs.train(tiny, [corpus_file], save=a, **kw)
    rb = cs.train(tiny, [corpus_file], save=b, **kw)
    assert ra.conversations == 4 and ra.steps == 2
    assert a.read_bytes() == b.read_bytes()
    loaded = deg.Cartridge.load(tiny, a)
    assert loaded.steps == 2
    answer = ra.cartridge.ask("fox?", max_tokens=6)
    assert loaded.ask("fox?", max_tokens=6) == answer
    # a new process loads the artifact and answers identically
    out = run_cli("cartridge", "ask", "--model", TINY, "--load", a, "--ask", "fox?",
                  "--max-tokens", 6).stdout
    assert out.startswith(f"[cartridge, 12 rows]\n{answer}\n\n[bare model]")


def test_interrupted_training_keeps_last_artifact(tiny, corpus_file, tmp_path):
    out = tmp_path / "c.safetensors"

    def stop(step, info):
        if step == 2:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        cs.train(tiny, [corpus_file], p=12, steps=5, accum=1, save=out, progress=stop,
                 seed=1, **SMALL)
    c = deg.Cartridge.load(tiny, out)
    assert c.steps == 2  # saved after step 2, before the interrupt reached the caller
    assert not [p for p in tmp_path.iterdir() if p.name not in ("c.safetensors", "doc.txt")]


def test_cli_train_ask_eval_equiv(corpus_file, tmp_path):
    out = tmp_path / "cli.safetensors"
    args = ["--model", TINY, "--corpus", corpus_file, "--p", 12, "--steps", 2, "--accum", 2,
            "--seed", 3, "--chunk-min", 24, "--chunk-max", 48, "--max-q", 6,
            "--max-a", 8, "--eval-every", 1, "--n-eval", 2]
    r = run_cli("cartridge", "train", *args, "--save", out)
    assert "trained: 4 conversations, 2 steps" in r.stdout
    assert "held-out distill loss: step 0:" in r.stdout
    # training cost in CPU-s (issue 13): the total is its three parts, per corpus token
    import re
    m = re.search(r"CPU: ([\d.]+) CPU-s = ([\d.]+) per corpus token \(generation ([\d.]+), "
                  r"teacher ([\d.]+), training ([\d.]+);", r.stdout)
    n_tok = int(re.search(r"corpus: 1 document\(s\), (\d+) tokens", r.stderr).group(1))
    cpu, per, parts = float(m.group(1)), float(m.group(2)), [float(m.group(i)) for i in (3, 4, 5)]
    # printed at 0.01 CPU-s: two tiny training steps can round to 0.00 (a flaky
    # `parts[2] > 0` failed on an idle run), so the parts are checked for their sum
    assert cpu > 0 and abs(cpu - sum(parts)) <= 0.02 and min(parts) >= 0
    assert per == pytest.approx(cpu / n_tok, abs=1e-4 + 0.005 / n_tok)
    again = tmp_path / "again.safetensors"
    run_cli("cartridge", "train", *args, "--save", again)
    assert out.read_bytes() == again.read_bytes()
    a1 = run_cli("cartridge", "ask", "--model", TINY, "--load", out, "--ask", "fox?",
                 "--corpus", corpus_file, "--max-tokens", 6).stdout
    a2 = run_cli("cartridge", "ask", "--model", TINY, "--load", out, "--ask", "fox?",
                 "--max-tokens", 6).stdout
    assert "[cartridge, 12 rows]" in a1 and "[bare model]" in a1 and "[corpus in context" in a1
    assert a1.split("[bare model]")[0] == a2.split("[bare model]")[0]
    e = run_cli("cartridge", "eval", "--model", TINY, "--load", out, "--corpus", corpus_file,
                "--n-eval", 2, "--chunk-min", 24, "--chunk-max", 48, "--max-q", 6,
                "--max-a", 8).stdout
    assert "gap closure" in e
    q = run_cli("cartridge", "equiv", "--model", TINY, "--corpus", corpus_file, "--p", 12,
                "--suffix-max", 8).stdout
    assert "max |delta logit| = 0, greedy 8/8" in q
    bad = run_cli("cartridge", "train", "--model", TINY, "--corpus", tmp_path / "nope.txt",
                  check=False)
    assert bad.returncode == 1 and "does not exist" in bad.stderr


def test_real_model_one_conversation(model, tmp_path):
    doc = tmp_path / "doc.txt"
    doc.write_text(TEXT * 2)
    c = cs.load_corpus(model, [doc])
    (v,) = cs.SelfStudy(model, c, seed=1, chunk_min=32, chunk_max=48, max_q=12,
                        max_a=12).generate(1)
    assert v.targets and v.n_supervised >= 1
    cart = deg.Cartridge.from_corpus(model, c.text, 16)
    loss = cs.group_backward(cart, [v])
    assert math.isfinite(loss) and loss > 0


def test_special_and_unreadable_paths(tiny, tmp_path, monkeypatch):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)  # reading it would block forever
    with pytest.raises(deg.DegIOError, match="not a regular file"):
        cs.load_corpus(tiny, [fifo])
    doc = tmp_path / "doc.txt"
    doc.write_text(TEXT)

    def denied(self):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(Path, "read_bytes", denied)  # tests run as root: chmod 000 is no test
    with pytest.raises(deg.DegIOError, match="cannot read .*Permission denied"):
        cs.load_corpus(tiny, [doc])


def test_heldout_set_cached(tiny, corpus_file, tmp_path, monkeypatch):
    cache = tmp_path / "cache"
    a = cs.heldout_set(tiny, cs.load_corpus(tiny, [corpus_file]), 5, 2, cache=cache, **SMALL)
    assert a == cs.SelfStudy(tiny, cs.load_corpus(tiny, [corpus_file]), seed=5,
                             **SMALL).generate(2)
    (f,) = cache.iterdir()
    key = cs.heldout_key(tiny, cs.load_corpus(tiny, [corpus_file]), 5, 2, **SMALL)
    assert f.name == key + ".json"
    # the key follows the corpus, the seed, n and every synthesis setting
    other = tmp_path / "other.txt"
    other.write_text(TEXT + " Extra words.")
    c = cs.load_corpus(tiny, [corpus_file])
    assert key != cs.heldout_key(tiny, cs.load_corpus(tiny, [other]), 5, 2, **SMALL)
    assert key != cs.heldout_key(tiny, c, 6, 2, **SMALL)
    assert key != cs.heldout_key(tiny, c, 5, 3, **SMALL)
    assert key != cs.heldout_key(tiny, c, 5, 2, **dict(SMALL, max_a=9))

    def no_synthesis(self, n):
        raise AssertionError("held-out set synthesised again")

    monkeypatch.setattr(cs.SelfStudy, "generate", no_synthesis)
    assert cs.heldout_set(tiny, c, 5, 2, cache=cache, **SMALL) == a
    f.write_text("{ torn")  # a damaged file is synthesised again, not trusted
    monkeypatch.undo()
    assert cs.heldout_set(tiny, c, 5, 2, cache=cache, **SMALL) == a


def test_cli_eval_no_icl_and_cache(corpus_file, tmp_path):
    art = tmp_path / "c.safetensors"
    with deg.load_model(TINY) as m:
        deg.Cartridge.from_corpus(m, TEXT, 12).save(art)
    env = {"DEG_CACHE": str(tmp_path / "cache")}
    args = ["cartridge", "eval", "--model", TINY, "--load", art, "--corpus", corpus_file,
            "--n-eval", 2, "--chunk-min", 24, "--chunk-max", 48, "--max-q", 6, "--max-a", 8]
    full = run_cli(*args, env=env).stdout
    assert len(list((tmp_path / "cache" / "heldout").iterdir())) == 1
    r = run_cli(*args, "--no-icl", "--untrained", env=env).stdout
    assert "nan" not in r
    # the saved cartridge IS the untrained corpus init: the control arm equals it
    cart_line = r.splitlines()[2].split()
    init_line = r.splitlines()[3].split()
    assert cart_line[:1] == ["cartridge"] and init_line[:2] == ["untrained", "init"]
    assert cart_line[2] == init_line[3]
    assert "corpus in context skipped (--no-icl)" in r and "gap closure skipped" in r
    # same cached questions: identical bare and cartridge lines
    assert full.splitlines()[:3] == r.splitlines()[:3]
    full = run_cli(*args, "--untrained", env=env).stdout
    assert "gap closure" in full.splitlines()[3]


def test_cli_sigint_keeps_last_artifact(corpus_file, tmp_path):
    """A real Ctrl-C (SIGINT) mid-training: exit 130, a clear message, and
    the last atomically saved artifact loads."""
    import signal
    import subprocess
    import sys
    import time
    out = tmp_path / "c.safetensors"
    proc = subprocess.Popen(
        [sys.executable, "-m", "deg.cli", "cartridge", "train", "--model", str(TINY),
         "--corpus", str(corpus_file), "--p", "12", "--steps", "100000", "--accum", "1",
         "--seed", "2", "--chunk-min", "24", "--chunk-max", "48", "--max-q", "6",
         "--max-a", "8", "--quiet", "--save", str(out)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        # a runner started in the background (nohup, `&`) passes SIGINT ignored,
        # and a Python started that way never raises KeyboardInterrupt
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        with deg.load_model(TINY) as m:
            deadline = time.monotonic() + 120
            while time.monotonic() < deadline:
                if out.exists() and deg.Cartridge.load(m, out).steps >= 2:
                    break
                time.sleep(0.2)
            proc.send_signal(signal.SIGINT)
            _, err = proc.communicate(timeout=120)
            assert proc.returncode == 130, err
            assert "interrupted after" in err and str(out) in err
            assert deg.Cartridge.load(m, out).steps >= 2
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["c.safetensors", "doc.txt"]


def test_epochs_replay_without_synthesis(tiny, corpus_file, tmp_path):
    kw = dict(p=12, steps=2, accum=2, seed=4, epochs=3, **SMALL)
    seen = []
    r = cs.train(tiny, [corpus_file], save=tmp_path / "a.safetensors",
                 progress=lambda s, i: seen.append((s, i["epoch"], i["synthesised"],
                                                    i["generated"])), **kw)
    assert r.conversations == 4 and r.steps == 6 and len(r.losses) == 6
    # only the first pass synthesises (generated: every conversation made so far)
    assert seen == [(1, 1, 2, 2), (2, 1, 4, 4), (3, 2, 4, 4), (4, 2, 4, 4), (5, 3, 4, 4),
                    (6, 3, 4, 4)]
    assert deg.Cartridge.load(tiny, tmp_path / "a.safetensors").steps == 6
    cs.train(tiny, [corpus_file], save=tmp_path / "b.safetensors", **kw)
    assert (tmp_path / "a.safetensors").read_bytes() == (tmp_path / "b.safetensors").read_bytes()


def test_cli_train_p_zero_is_a_clear_error(corpus_file, tmp_path):
    """--p 0 is refused with the p rule, not a ZeroDivisionError traceback."""
    import subprocess
    import sys
    r = subprocess.run(
        [sys.executable, "-m", "deg.cli", "cartridge", "train", "--model", str(TINY),
         "--corpus", str(corpus_file), "--p", "0", "--steps", "1", "--quiet",
         "--save", str(tmp_path / "c.safetensors")], capture_output=True, text=True, timeout=300)
    assert r.returncode != 0
    assert "p must be >= 2" in r.stderr and "Traceback" not in r.stderr, r.stderr
    assert not (tmp_path / "c.safetensors").exists()


def _stop_at(*steps):
    def progress(step, info):
        if step in steps:
            raise KeyboardInterrupt
    return progress


@pytest.mark.parametrize("placement", ["random", "cover"])
def test_resume_is_bitwise_the_uninterrupted_run(tiny, corpus_file, tmp_path, placement):
    """A run killed during synthesis (a leftover conversation of a generation
    batch in the queue) and again mid-replay, resumed from its --state
    snapshots, ends with the same artifact, losses and counts as a run that
    was never interrupted; a finished 1-pass run extended to 2 passes too.
    Under cover placement the snapshot's draw count puts the resumed stream
    on the windows the stopped one would have drawn."""
    kw = dict(p=12, steps=3, accum=2, gen_batch=3, seed=5, recall=0.5, placement=placement,
              **SMALL)
    ref = cs.train(tiny, [corpus_file], save=tmp_path / "ref.safetensors", epochs=2, **kw)
    out, st = tmp_path / "run.safetensors", tmp_path / "state"
    with pytest.raises(KeyboardInterrupt):
        cs.train(tiny, [corpus_file], save=out, state=st, epochs=2, progress=_stop_at(2), **kw)
    lines = (st / "conversations.jsonl").read_text().splitlines()
    assert len(lines) == 6  # two generation batches of 3; 4 trained on
    with (st / "conversations.jsonl").open("a") as fh:
        fh.write('{"half a line')  # a kill while appending: dropped on resume
    with pytest.raises(KeyboardInterrupt):
        cs.train(tiny, [corpus_file], save=out, state=st, epochs=2, progress=_stop_at(5), **kw)
    steps = []
    r = cs.train(tiny, [corpus_file], save=out, state=st, epochs=2,
                 progress=lambda s, i: steps.append(s), **kw)
    assert steps == [6]
    assert out.read_bytes() == (tmp_path / "ref.safetensors").read_bytes()
    assert r.losses == ref.losses and len(r.losses) == 6
    assert (r.conversations, r.steps) == (ref.conversations, ref.steps) == (6, 6)
    assert r.timing.keys() == ref.timing.keys()
    # extend a finished 1-pass run to 2 passes
    ext, st2 = tmp_path / "ext.safetensors", tmp_path / "state2"
    cs.train(tiny, [corpus_file], save=ext, state=st2, epochs=1, **kw)
    assert deg.Cartridge.load(tiny, ext).steps == 3
    r2 = cs.train(tiny, [corpus_file], save=ext, state=st2, epochs=2, **kw)
    assert ext.read_bytes() == (tmp_path / "ref.safetensors").read_bytes()
    assert r2.losses == ref.losses
    # a finished run started again does no work and returns the same cartridge
    again = cs.train(tiny, [corpus_file], state=st2, epochs=2, progress=_stop_at(1, 6), **kw)
    assert again.losses == ref.losses


def test_resume_refuses_another_run(tiny, corpus_file, tmp_path):
    kw = dict(p=12, steps=2, accum=1, seed=3, **SMALL)
    st = tmp_path / "state"
    cs.train(tiny, [corpus_file], state=st, epochs=2, **kw)
    with pytest.raises(deg.ArgumentError, match=r"other settings \(lr: 0.002 there, 0.01 here"):
        cs.train(tiny, [corpus_file], state=st, lr=1e-2, **kw)
    with pytest.raises(deg.ArgumentError, match="at step 4, past this run's 2"):
        cs.train(tiny, [corpus_file], state=st, epochs=1, **kw)
    other = tmp_path / "other.txt"
    other.write_text(TEXT.replace("fox", "cat"))
    with pytest.raises(deg.ArgumentError, match="another corpus"):
        cs.train(tiny, [other], state=st, epochs=2, **kw)
    (st / "state.json").write_text("{")
    with pytest.raises(deg.FormatError, match="state.json is unreadable"):
        cs.train(tiny, [corpus_file], state=st, epochs=2, **kw)
    f = tmp_path / "file"
    f.write_text("x")
    with pytest.raises(deg.ArgumentError, match="not a directory"):
        cs.train(tiny, [corpus_file], state=f, **kw)


def test_cli_train_state_resumes(corpus_file, tmp_path):
    out, st = tmp_path / "c.safetensors", tmp_path / "st"
    args = ["cartridge", "train", "--model", TINY, "--corpus", corpus_file, "--p", 12,
            "--steps", 2, "--accum", 1, "--seed", 2, "--chunk-min", 24, "--chunk-max", 48,
            "--max-q", 6, "--max-a", 8, "--save", out, "--state", st, "--quiet"]
    run_cli(*args, "--epochs", 1)
    run_cli(*args, "--epochs", 2)
    ref = tmp_path / "ref.safetensors"
    run_cli(*[a if a != out else ref for a in args[:-3]], "--quiet", "--epochs", 2)
    assert out.read_bytes() == ref.read_bytes()
    assert deg.Cartridge.load(deg.load_model(TINY), out).steps == 4
