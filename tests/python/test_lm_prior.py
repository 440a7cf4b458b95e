"""The LM-head start prior of extract leaves (deg.json / options "lm_prior", issue 12) on
the real SmolLM2 and the shipped checkpoint: options {"start": 0} is bitwise the fill
without it, and with lambda > 0 each extract leaf's start logits (debug meta
"start_logits") move by exactly lambda * log p of each context token under the
backbone's own next-token distribution after the leaf's fork, recomputed here from the
trace's tokens through the Python trunk / fork API (the forward's own logits, not the
fill's code path; a LoRA checkpoint's fork runs with the adapter its head kind selects,
as in the fill); null's start logit and every end logit stay bitwise."""
import numpy as np

import deg
from deg.train import features as F
from deg.train.lora import Adapters

CTX = ("Order 4711 from ACME Tools, placed on 5 March 2026 by Jane Roe (jane@example.com).\n"
       "Shipping to: 12 Harbour Road, Portsmouth\n"
       "Total: $1,234.50\n"
       "The customer is angry and wants a refund.\n")
SCHEMA = {"type": "object", "properties": {
    "customer": {"type": ["string", "null"], "description": "who placed the order"},
    "email": {"type": ["string", "null"], "format": "email"},
    "city": {"type": ["string", "null"]},
    "total": {"type": ["number", "null"]},
    "angry": {"type": "boolean"}}}
LAMBDA = 0.3


def log_softmax(x):
    m = x.max()
    return x - (m + np.log(np.exp(x - m).sum()))


def test_lm_prior_moves_start_logits_by_lambda_log_p(model):
    ck = deg.load(deg.default_checkpoint_path(), model=model, debug=True)
    off = ck.fill(CTX, SCHEMA)
    zero = ck.fill(CTX, SCHEMA, options={"lm_prior": {"start": 0}})
    on = ck.fill(CTX, SCHEMA, options={"lm_prior": {"start": LAMBDA}})
    assert (zero["value"], zero["meta"]) == (off["value"], off["meta"])
    assert on["meta"]["/angry"] == off["meta"]["/angry"]  # a decide leaf: untouched
    feats = F.extract(ck, {"context": CTX, "schema": SCHEMA, "value": {}}, tokens=True)
    nc = feats.ctx.shape[0]
    ctx_ids = feats.trunk_ids[feats.ctx_first:feats.ctx_first + nc]
    V = model.info.n_vocab
    checked = []
    try:
        ads = Adapters(ck)
    except ValueError:  # a checkpoint without adapters: base-model forks
        ads = None
    with model.trunk([int(i) for i in feats.trunk_ids]) as tr:
        for f in feats.forks:
            if not f["mode"].startswith("extract"):
                continue
            with tr.fork() as fk:
                if ads is not None:
                    ads.select(fk, f["head_kind"])
                lg = np.frombuffer(fk.feed([int(i) for i in f["ids"]], logits="all"),
                                   dtype=np.float32)[-V:]
            want = LAMBDA * log_softmax(lg.astype(np.float64))[ctx_ids]
            m0, m1 = off["meta"][f["pointer"]], on["meta"][f["pointer"]]
            s0, s1 = np.array(m0["start_logits"]), np.array(m1["start_logits"])
            assert s0.shape == s1.shape == (nc + 1,)
            # fp32: lambda log p and the sum each round by half an ulp
            tol = 1e-6 + 1.2e-7 * (np.abs(s1[:nc]) + np.abs(want))
            err = np.abs((s1[:nc] - s0[:nc]) - want)
            assert (err <= tol).all(), (f["pointer"], float(err.max()))
            assert s1[nc] == s0[nc]
            assert m1["end_logits"] == m0["end_logits"]
            # log p over 49,152 tokens: a prior read at the wrong row or token, or not
            # normalised, would miss by units, far beyond tol
            assert np.abs(want).max() > 3.0
            checked.append(f["pointer"])
    assert sorted(checked) == ["/city", "/customer", "/email", "/total"]
    ck.close()
