"""Self-study: turn a corpus into a trained cartridge, serve it, compare it.

Spec: cartridges.md ("Self-study", "Serving", "Batched self-study",
"Learning rate vs batch size"); the method is Cartridges (arXiv 2506.06266,
Algorithm 1 with k = 1).

The conversation engine and the training run are libdeg's
(include/cartridge.h "Self-study": deg_corpus, deg_selfstudy,
deg_selfstudy_backward, deg_selfstudy_run), so a C host gets the same
conversations and the same artifact bytes for a seed; this module keeps file
loading, progress, artifact saves, resumable snapshots, held-out caching,
evaluation and serving. One conversation (deg_selfstudy_new documents the
draws):
  1. a uniform random token span of the corpus (the chunk) and one of seven
     seed-prompt types (form only, never content);
  2. bot A (the same model, temperature 0.6) writes a message about the
     chunk, which it sees in its system message;
  3. bot B (greedy) answers with the chunk in context; think spans stripped;
  4. B's tokens are teacher-forced with the chunk in context; each answer
     position keeps its top-20 tokens up to 0.99 probability mass;
  5. the student sequence is A's message + B's answer in the chat layout,
     with no chunk.
gen_batch conversations are synthesised together (one lockstep decode per
bot, one teacher pass); one optimizer step per accum conversations, on the
gradient of the packed loss (one packed forward/backward by default;
pack=False: one weighted backward per conversation, the same gradient).

`deg.cartridges` is the old name of this module (deprecated alias).
"""
import hashlib
import json
import math
import os
import time
from array import array
from collections import namedtuple
from os import fspath
from pathlib import Path

from ._native import ffi, lib, check
from .cartridge import Cartridge, DistillTarget, compose_trunk
from .cartridge_resume import RunState
from .errors import ArgumentError, DegIOError, FormatError, RangeError
from .model import Model, generate_forks
from .spec import answer as _spec_answer

__all__ = ["Corpus", "load_corpus", "SEED_PROMPTS", "SEED_TYPES", "Conversation", "SelfStudy",
           "train", "RECIPE", "RECIPE_BUDGET", "budget_plan", "BudgetPlan", "budget_steps", "passage_spans", "packed_backward",
           "group_backward", "heldout_set", "heldout_key", "nll_cartridge",
           "ask", "evaluate", "Evaluation", "TrainReport"]

# --------------------------------------------------------------------------
# Corpus
# --------------------------------------------------------------------------

Document = namedtuple("Document", "name first end")  # token span [first, end) in the stream


class Corpus:
    """A provenance-tagged token stream of one or more documents (a
    deg_corpus: with several documents every block starts with a header line
    naming it, "Document: NAME", so chunks and the corpus-in-context arm say
    where the text comes from)."""

    def __init__(self, model, docs):
        """docs: list of (name, text)."""
        if not docs:
            raise ArgumentError("corpus: no documents")
        self.model = model
        names = [ffi.new("char[]", str(n).encode("utf-8", "surrogateescape")) for n, _ in docs]
        texts = [ffi.new("char[]", t.encode("utf-8", "surrogatepass")) for _, t in docs]
        lens = [len(t.encode("utf-8", "surrogatepass")) for _, t in docs]
        out = ffi.new("deg_corpus **")
        with model._use() as mp:
            check(lib.deg_corpus_new(mp, ffi.new("char *[]", names), ffi.new("char *[]", texts),
                                     ffi.new("size_t[]", lens), len(docs), out))
        self._ptr = ffi.gc(out[0], lib.deg_corpus_free)
        n = lib.deg_corpus_len(self._ptr)
        self.ids = list(ffi.unpack(lib.deg_corpus_ids(self._ptr), n)) if n else []
        ln = ffi.new("size_t *")
        self.text = ffi.unpack(lib.deg_corpus_text(self._ptr, ln), ln[0]).decode("utf-8")
        self.documents = []
        name, first, end = ffi.new("char **"), ffi.new("size_t *"), ffi.new("size_t *")
        for i, (nm, _) in enumerate(docs):
            check(lib.deg_corpus_doc(self._ptr, i, name, first, end))
            self.documents.append(Document(nm, first[0], end[0]))

    def __len__(self):
        return len(self.ids)

    def sources(self, first, end):
        """Names of the documents overlapping token span [first, end)."""
        return [d.name for d in self.documents if d.first < end and first < d.end]


def _read_document(path):
    try:
        data = Path(path).read_bytes()
    except OSError as e:
        raise DegIOError(f"corpus: cannot read {fspath(path)!r}: {e.strerror or e}") from None
    if b"\0" in data:
        raise FormatError(f"corpus: {fspath(path)!r} is a binary file (NUL bytes); "
                          "give UTF-8 text")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise FormatError(f"corpus: {fspath(path)!r} is not UTF-8 text (byte {e.start})") \
            from None
    return text


def load_corpus(model, paths):
    """Read text files and directories (recursively, sorted; hidden files
    skipped) into one Corpus. Errors: DegIOError (unreadable or missing
    path), FormatError (binary or non-UTF-8 file), ArgumentError (no text)."""
    if isinstance(paths, (str, os.PathLike)):
        paths = [paths]
    files = []
    for p in paths:
        p = Path(p)
        if p.is_dir():
            found = sorted(f for f in p.rglob("*")
                           if f.is_file() and not any(s.startswith(".") for s in
                                                      f.relative_to(p).parts))
            if not found:
                raise ArgumentError(f"corpus: directory {fspath(p)!r} holds no files")
            files += found
        elif p.is_file():
            files.append(p)
        elif p.exists():  # a FIFO or device would block or never end
            raise DegIOError(f"corpus: {fspath(p)!r} is not a regular file or directory")
        else:
            raise DegIOError(f"corpus: {fspath(p)!r} does not exist")
    docs = []
    for f in files:
        text = _read_document(f)
        if text.strip():
            docs.append((fspath(f), text))
    if not docs:
        raise ArgumentError("corpus: empty (no text in " +
                            ", ".join(repr(fspath(f)) for f in files) + ")")
    return Corpus(model, docs)


def chat_ids(model, messages, add_generation_prompt=True):
    """Token ids of a chat: the library's one chat tokenization
    (Model.chat_tokenize, deg_chat_tokenize; a corpus that contains
    "<|im_start|>" cannot forge a turn)."""
    return model.chat_tokenize(messages, add_generation_prompt)



# --------------------------------------------------------------------------
# Seed prompts (form only, never content): libdeg's table
# --------------------------------------------------------------------------

#: The seven seed-prompt types: the reference five (structuring,
#: summarization, question, use-case, creative) plus mechanism (why/how) and
#: verbatim precision (exact wording, numbers, names), read from libdeg
#: (deg_selfstudy_seed_prompt). Each asks bot A for a message about the
#: excerpt it sees; none names a topic.
SEED_TYPES = [ffi.string(lib.deg_selfstudy_kind_name(k)).decode()
              for k in range(lib.DEG_SELFSTUDY_N_SEED_TYPES)]
SEED_PROMPTS = {name: [ffi.string(lib.deg_selfstudy_seed_prompt(k, j)).decode()
                       for j in range(lib.deg_selfstudy_n_seed_prompts(k))]
                for k, name in enumerate(SEED_TYPES)}


def passage_spans(model, ids, max_tokens, min_words=12):
    """The answer passages of a token stream, as token spans [first, end)
    (deg_selfstudy_passages): its paragraphs (split at blank lines) of at
    least min_words words that do not end with '?', each cut into the
    fewest equal pieces of at most max_tokens tokens."""
    ids = list(ids)
    buf = ffi.new("int32_t[]", ids or [0])
    spans, n = ffi.new("size_t **"), ffi.new("size_t *")
    with model._use() as mp:
        check(lib.deg_selfstudy_passages(mp, buf, len(ids), max_tokens, min_words, spans, n))
    try:
        flat = list(ffi.unpack(spans[0], 2 * n[0])) if n[0] else []
    finally:
        lib.deg_free(spans[0])
    return [(flat[2 * i], flat[2 * i + 1]) for i in range(n[0])]


Conversation = namedtuple(
    "Conversation", "seed_type chunk_span message answer_ids student_ids targets n_supervised")

_KIND = {ffi.string(lib.deg_selfstudy_kind_name(k)).decode(): k
         for k in range(lib.DEG_SELFSTUDY_PASSAGE_QA + 1)}


def _stop_ids(model):
    """The library's stop-token rule (Model.stop_ids, lib/model/chat.c)."""
    return model.stop_ids()


def _from_c(c):
    """A Conversation from a deg_selfstudy_conv."""
    targets = [DistillTarget(t.position, t.token, t.logprob)
               for t in ffi.unpack(c.targets, c.n_targets)] if c.n_targets else []
    return Conversation(ffi.string(lib.deg_selfstudy_kind_name(c.kind)).decode(),
                        (c.chunk_first, c.chunk_end), ffi.string(c.message).decode("utf-8"),
                        list(ffi.unpack(c.answer_ids, c.n_answer)) if c.n_answer else [],
                        list(ffi.unpack(c.student_ids, c.n_student)) if c.n_student else [],
                        targets, c.n_supervised)


def _to_c(convs):
    """convs as a deg_selfstudy_conv[] (borrowed buffers: keep the returned
    holder alive while C reads it). Returns (array, holder)."""
    arr = ffi.new("deg_selfstudy_conv[]", max(1, len(convs)))
    keep = []
    for i, v in enumerate(convs):
        c = arr[i]
        c.kind = _KIND[v.seed_type]
        c.chunk_first, c.chunk_end = v.chunk_span
        msg = ffi.new("char[]", v.message.encode("utf-8"))
        ans = ffi.new("int32_t[]", list(v.answer_ids) or [0])
        stu = ffi.new("int32_t[]", list(v.student_ids) or [0])
        tg = ffi.new("deg_distill_target[]", max(1, len(v.targets)))
        for k, t in enumerate(v.targets):
            tg[k].position, tg[k].token, tg[k].logprob = t
        keep += [msg, ans, stu, tg]
        c.message, c.answer_ids, c.n_answer = msg, ans, len(v.answer_ids)
        c.student_ids, c.n_student = stu, len(v.student_ids)
        c.targets, c.n_targets, c.n_supervised = tg, len(v.targets), v.n_supervised
    return arr, keep


def _take(arr, n):
    """Python Conversations from n library-owned ones (cleared here)."""
    try:
        return [_from_c(arr[i]) for i in range(n)]
    finally:
        for i in range(n):
            lib.deg_selfstudy_conv_clear(ffi.addressof(arr, i))


def study_params(seed=0, chunk_min=256, chunk_max=512, max_q=64, max_a=160, top_k=20,
                 min_mass=0.99, temperature_a=0.6, recall=0.0, recall_q=(16, 48),
                 spec_b=False, passage_qa=0.0):
    """The deg_selfstudy_params of these settings (SelfStudy's keywords; the
    library checks them)."""
    p = lib.deg_selfstudy_default_params()
    p.seed = seed & 0xFFFFFFFFFFFFFFFF
    p.chunk_min, p.chunk_max, p.max_q, p.max_a = chunk_min, chunk_max, max_q, max_a
    p.top_k, p.min_mass, p.temperature_a = top_k, min_mass, temperature_a
    p.recall, p.passage_qa, p.spec_b = recall, passage_qa, 1 if spec_b else 0
    p.recall_q_min, p.recall_q_max = recall_q
    return p


#: deg_selfstudy_placement by name (SelfStudy's placement).
PLACEMENTS = {"random": 0, "cover": 1}


class SelfStudy:
    """Synthesises self-study conversations for a corpus (a deg_selfstudy:
    deterministic for a seed; the chunk, the seed type, the kind and bot A's
    sampling stream all derive from it; bot B is greedy).

    recall: the fraction of corpus-recall conversations (issue 13): the user
    message is a span of the corpus (recall_q tokens, uniform in
    [recall_q[0], recall_q[1]]) and the answer the corpus text that follows
    it (up to max_a tokens), teacher-forced behind the chunk holding both:
    the targets are the teacher's distributions over the document's own
    words (bench/README.md "Human-written Q&A").

    passage_qa: the fraction of passage-question conversations (issue 13): a
    passage (passage_spans) drawn uniformly, the chunk placed around it; bot
    A writes the question the passage answers; the answer is the passage's
    words (whitespace-normalised), teacher-forced behind chunk and question.
    A corpus without passages gets recall conversations instead. recall +
    passage_qa <= 1; one uniform draw per conversation decides the kind, and
    none is drawn when both are 0.

    spec_b: bot B decodes speculatively (--spec-b; the same conversations).

    placement: where chunks go (deg_selfstudy_placement): "random", the
    spec's uniform chunk start, or "cover" (issue 13): shuffled cycles of
    windows that tile the corpus (max_a tokens wide when recall = 1), a
    recall answer starting at its window, so every corpus token is inside a
    recall answer once ceil(corpus tokens / max_a) conversations are
    drawn."""

    def __init__(self, model, corpus, seed=0, chunk_min=256, chunk_max=512, max_q=64,
                 max_a=160, top_k=20, min_mass=0.99, temperature_a=0.6, recall=0.0,
                 recall_q=(16, 48), spec_b=False, passage_qa=0.0, placement="random"):
        if not isinstance(corpus, Corpus):
            raise ArgumentError("SelfStudy needs a deg.selfstudy.Corpus (load_corpus)")
        if not 0.0 <= recall <= 1.0:  # the float32 param would round a bad value into range
            raise ArgumentError(f"recall is a fraction in [0, 1], got {recall}")
        if not 0.0 <= passage_qa <= 1.0 or recall + passage_qa > 1.0 + 1e-9:
            raise ArgumentError(f"passage_qa is a fraction in [0, 1] with recall + passage_qa "
                                f"<= 1, got passage_qa {passage_qa}, recall {recall}")
        if placement not in PLACEMENTS:
            raise ArgumentError(f"placement must be one of {sorted(PLACEMENTS)}, got "
                                f"{placement!r}")
        p = study_params(seed, chunk_min, chunk_max, max_q, max_a, top_k, min_mass,
                         temperature_a, recall, recall_q, spec_b, passage_qa)
        self.model, self.corpus = model, corpus
        self.chunk_min, self.chunk_max = chunk_min, chunk_max
        self.max_q, self.max_a = max_q, max_a
        self.top_k, self.min_mass, self.temperature_a = top_k, min_mass, temperature_a
        self.recall, self.recall_q = float(recall), tuple(recall_q)
        self.passage_qa, self.spec_b = float(passage_qa), spec_b
        out = ffi.new("deg_selfstudy **")
        check(lib.deg_selfstudy_new(corpus._ptr, ffi.new("deg_selfstudy_params *", p), out))
        self._ptr = ffi.gc(out[0], lib.deg_selfstudy_free)
        self.placement = placement
        check(lib.deg_selfstudy_set_placement(self._ptr, PLACEMENTS[placement]))
        self._timing0 = {"generate": 0.0, "teacher": 0.0, "generate_cpu": 0.0,
                         "teacher_cpu": 0.0}

    @property
    def timing(self):
        """Wall seconds and CPU seconds of the process (all threads) spent
        synthesising and in the teacher pass: on a shared machine the CPU
        figures are the stable ones. Settable (a resumed run's totals)."""
        t = lib.deg_selfstudy_get_timing(self._ptr)
        return {k: self._timing0[k] + getattr(t, k) for k in self._timing0}

    @timing.setter
    def timing(self, value):
        t = lib.deg_selfstudy_get_timing(self._ptr)
        self._timing0 = {k: value[k] - getattr(t, k) for k in self._timing0}

    @property
    def spec_counts(self):
        """--spec-b: tokens bot B drafted and kept."""
        t = lib.deg_selfstudy_get_timing(self._ptr)
        return {"drafted": t.drafted, "accepted": t.accepted}

    def rng_state(self):
        """The synthesis stream's state (4 words)."""
        s = ffi.new("uint64_t[4]")
        lib.deg_selfstudy_get_rng(self._ptr, s)
        return list(s)

    def settings(self):
        """The synthesis settings (what a seed's conversations depend on)."""
        out = {"chunk_min": self.chunk_min, "chunk_max": self.chunk_max, "max_q": self.max_q,
               "max_a": self.max_a, "top_k": self.top_k, "min_mass": self.min_mass,
               "temperature_a": self.temperature_a}
        if self.recall:
            out.update(recall=self.recall, recall_q=list(self.recall_q))
        if self.passage_qa:
            out.update(passage_qa=self.passage_qa)
        if self.placement != "random":  # the keys of runs made before placements existed
            out.update(placement=self.placement)
        return out

    @property
    def n_drawn(self):
        """Conversations drawn so far (deg_selfstudy_n_drawn)."""
        return lib.deg_selfstudy_n_drawn(self._ptr)

    def generate(self, n):
        """n conversations, synthesised as one lockstep batch
        (deg_selfstudy_generate)."""
        if n < 0:
            raise ArgumentError(f"n must be >= 0, got {n}")
        arr = ffi.new("deg_selfstudy_conv[]", max(1, n))
        check(lib.deg_selfstudy_generate(self._ptr, n, arr))
        return _take(arr, n)


def _backward(cartridge, convs, pack, checkpoint):
    """deg_selfstudy_backward over cartridge (or a list: the composition)."""
    from contextlib import ExitStack
    parts = list(cartridge) if isinstance(cartridge, (list, tuple)) else [cartridge]
    arr, keep = _to_c(convs)
    loss = ffi.new("float *")
    with ExitStack() as held:
        ptrs = ffi.new("deg_cartridge *[]", [held.enter_context(c._use()) for c in parts])
        check(lib.deg_selfstudy_backward(ptrs, len(parts), arr, len(convs), 1 if pack else 0,
                                         1 if checkpoint else 0, loss))
    del keep
    return loss[0]


def group_backward(cartridge, convs, checkpoint=False):
    """Gradient of the group's packed loss (mean over all its supervised
    positions) accumulated into the cartridge, one backward per
    conversation with its targets weighted by its share of the positions
    (deg_selfstudy_backward, pack = 0); returns that loss. cartridge may be
    a list of Cartridges (composed prefix, every part's gradient)."""
    return _backward(cartridge, convs, False, checkpoint)


def packed_backward(cartridge, convs, checkpoint=False):
    """One forward/backward over the group's conversations packed back to
    back (deg_selfstudy_backward, pack = 1: each segment attends to the
    cartridge and itself only); the loss is the mean over all supervised
    positions. Same gradient as group_backward up to f32 roundoff.
    cartridge may be a list of Cartridges (a composition)."""
    return _backward(cartridge, convs, True, checkpoint)


# --------------------------------------------------------------------------
# Held-out evaluation
# --------------------------------------------------------------------------

def _logprob_rows(rows, nv, tokens):
    """Sum of log softmax(row_j)[tokens[j]] over rows j (f64)."""
    try:
        import numpy as np
        a = np.frombuffer(rows, dtype=np.float32).reshape(-1, nv).astype(np.float64)
        m = a.max(axis=1)
        lse = m + np.log(np.exp(a - m[:, None]).sum(axis=1))
        return float((a[np.arange(len(tokens)), tokens] - lse).sum())
    except ImportError:
        s = 0.0
        for j, t in enumerate(tokens):
            r = rows[j * nv:(j + 1) * nv]
            m = max(r)
            s += r[t] - m - math.log(math.fsum(math.exp(x - m) for x in r))
        return s


Evaluation = namedtuple("Evaluation", "nll_bare nll_cartridge nll_icl gap_closure "
                                      "rows_bare rows_cartridge rows_icl n_tokens distill_loss")


_HELDOUT_VERSION = 2  # bump when synthesis changes what a seed produces (2: libdeg's stream)


def _model_fingerprint(model):
    """What the teacher's answers depend on: the model's geometry and its
    file(s) (resolved path, size, mtime), without hashing the weights."""
    i = model.info
    parts = [i.arch, i.name, i.n_vocab, i.n_embd, i.n_layer, i.weight_bytes]
    path = Path(model.path).resolve()
    files = sorted(f for f in path.rglob("*") if f.is_file()) if path.is_dir() else [path]
    for f in files:
        st = f.stat()
        parts += [str(f), st.st_size, st.st_mtime_ns]
    return parts


def heldout_key(model, corpus, seed, n, **kw):
    """Cache key of a held-out set: sha256 over the corpus token ids, the
    model fingerprint, the seed, n and the synthesis settings."""
    study = SelfStudy(model, corpus, seed=seed, **kw)  # validates and fills defaults
    ids = hashlib.sha256(array("i", corpus.ids).tobytes()).hexdigest()
    blob = json.dumps({"v": _HELDOUT_VERSION, "corpus": ids, "model": _model_fingerprint(model),
                       "seed": seed, "n": n, "settings": study.settings()}, sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()


def _conv_to_json(c):
    d = c._asdict()
    d["targets"] = [list(t) for t in c.targets]
    return d


def _conv_from_json(d):
    d = dict(d)
    d["chunk_span"] = tuple(d["chunk_span"])
    d["targets"] = [DistillTarget(*t) for t in d["targets"]]
    return Conversation(**d)


def heldout_set(model, corpus, seed, n, cache=None, **kw):
    """n fixed conversations synthesised with a held-out seed.

    cache: a directory for the set (default: <deg cache>/heldout, see
    deg.cache_dir()), or False to always synthesise. A cached set is keyed by
    heldout_key (corpus, model, seed, n, settings), so repeated evaluations
    score the same questions without re-synthesis; files are written
    atomically and an unreadable one is synthesised again."""
    if cache is False:
        return SelfStudy(model, corpus, seed=seed, **kw).generate(n)
    from .fetch import cache_dir
    d = Path(cache) if cache else cache_dir() / "heldout"
    f = d / (heldout_key(model, corpus, seed, n, **kw) + ".json")
    try:
        convs = [_conv_from_json(c) for c in json.loads(f.read_text())["conversations"]]
        if len(convs) == n:
            return convs
    except (OSError, ValueError, KeyError, TypeError):
        pass
    convs = SelfStudy(model, corpus, seed=seed, **kw).generate(n)
    try:
        d.mkdir(parents=True, exist_ok=True)
        tmp = f.with_name(f"{f.name}.{os.getpid()}.tmp")
        tmp.write_text(json.dumps({"seed": seed, "n": n,
                                   "conversations": [_conv_to_json(c) for c in convs]}))
        os.replace(tmp, f)
    except OSError:
        pass  # a read-only cache costs re-synthesis next time, nothing else
    return convs


def _weighted(targets, w):
    lw = math.log(w)
    return [DistillTarget(t.position, t.token, t.logprob + lw) for t in targets]


def distill_loss(cartridge, convs):
    """Mean held-out distillation loss (per supervised position)."""
    total = sum(c.n_supervised for c in convs)
    return sum(cartridge.eval(c.student_ids, _weighted(c.targets, c.n_supervised / total))
               for c in convs if c.targets)


def nll_cartridge(cartridge, convs):
    """NLL per token of the convs' teacher answers behind the cartridge."""
    lp, n_tok = 0.0, 0
    for c in convs:
        prompt = len(c.student_ids) - len(c.answer_ids)
        one_hot = [DistillTarget(prompt + j, t, 0.0) for j, t in enumerate(c.answer_ids)]
        lp -= cartridge.eval(c.student_ids, one_hot) * len(c.answer_ids)
        n_tok += len(c.answer_ids)
    return -lp / n_tok


def evaluate(cartridge, corpus, convs, icl=True):
    """Score the teacher's answers of convs by NLL per token under (a) the
    bare model, (b) the cartridge, (c) the whole corpus in context (as a
    system message). Returns an Evaluation (gap closure = (bare - cartridge)
    / (bare - ICL)); the KV rows are means over the questions."""
    model = cartridge.model
    nv = model.info.n_vocab
    n_tok = sum(len(c.answer_ids) for c in convs)
    lp_bare = lp_icl = 0.0
    rows_bare = rows_icl = 0
    sys_ids = chat_ids(model, [{"role": "system", "content": corpus.text}],
                       add_generation_prompt=False)
    icl_trunk = model.trunk(sys_ids) if icl else None
    for c in convs:
        prompt = c.student_ids[:len(c.student_ids) - len(c.answer_ids)]
        ans = c.answer_ids
        t = model.trunk()
        rows = t.prefill(c.student_ids[:-1], logits="all")
        lp_bare += _logprob_rows(rows[(len(prompt) - 1) * nv:], nv, ans)
        t.close()
        rows_bare += len(c.student_ids)
        if icl:
            full = chat_ids(model, [{"role": "system", "content": corpus.text},
                                    {"role": "user", "content": c.message}])
            if full[:len(sys_ids)] != sys_ids:
                raise FormatError("corpus system message is not a prefix of the chat layout")
            tail = full[len(sys_ids):] + ans
            f = icl_trunk.fork()
            rows = f.feed(tail[:-1], logits="all")
            f.close()
            lp_icl += _logprob_rows(rows[(len(tail) - len(ans) - 1) * nv:], nv, ans)
            rows_icl += len(sys_ids) + len(tail)
    if icl_trunk is not None:
        icl_trunk.close()
    nb, nc = -lp_bare / n_tok, nll_cartridge(cartridge, convs)
    ni = -lp_icl / n_tok if icl else float("nan")
    gap = (nb - nc) / (nb - ni) if icl and nb != ni else float("nan")
    n = len(convs)
    return Evaluation(nb, nc, ni, gap, rows_bare / n, len(cartridge) + rows_bare / n,
                      rows_icl / n if icl else float("nan"), n_tok,
                      distill_loss(cartridge, convs))


# --------------------------------------------------------------------------
# Training
# --------------------------------------------------------------------------

#: The `--budget` recipe (issue 13; bench/README.md "Session 11"). Each
#: value is the best one measured (SmolLM2-135M, p 64, gap closure of
#: human-written reference answers, bare -> whole document in context):
#: recall 1, corpus-recall conversations only (session 10: 0.344 vs 0.316 for
#: recall 0.5 + passage questions 0.5 on the procps FAQ); placement "cover"
#: (every corpus token inside a recall answer once per cycle of ceil(n /
#: max_a) conversations; session 10: answers no conversation supervised
#: closed 0.06-0.23, whole-covered ones 0.522); answers <= 192 tokens
#: (twice the supervised tokens per chunk prefill of 96, and a cycle half as
#: long); lr 2e-2 at 2 conversations a step (0.344 after 32 steps vs 0.103
#: for lr 1e-2 at 4 a step); 4 passes (procps FAQ at RECIPE_BUDGET: 0.238 /
#: 0.354 / 0.562 after 1 / 2 / 4 passes). The conversation count comes from
#: the corpus length (budget_plan at RECIPE_BUDGET unless --budget says
#: otherwise); nothing else is tuned per document.
RECIPE = dict(recall=1.0, passage_qa=0.0, placement="cover", lr=2e-2, epochs=4, accum=2,
              chunk_min=128, chunk_max=256, max_q=40, max_a=192)

#: The recipe's coverage (budget_plan): 4 = conversations x 192 / corpus
#: tokens, i.e. ~4 cover cycles of 192-token recall answers (the mean chunk
#: of 128-256 is 192 too): every corpus token supervised ~4 times.
RECIPE_BUDGET = 4.0

#: A run sized by coverage (budget_plan): conversations to synthesise, steps
#: per pass (accum conversations each), the mean chunk length used, the
#: coverage they reach (>= the one asked for), and the most answer tokens
#: they can supervise per corpus token (max_a each).
BudgetPlan = namedtuple("BudgetPlan", "conversations steps mean_chunk coverage "
                                      "supervised_per_token")


def budget_plan(corpus_tokens, coverage, chunk_min, chunk_max, accum, max_a):
    """The conversation count and steps for a coverage target, by the spec's
    rule (doc/spec/cartridges.md, "What a cartridge learns"): coverage =
    conversations x mean chunk length / corpus tokens, the budget that bounds
    verbatim recall (~20 for one ~5k-token document to be quoted back; per-
    conversation cost does not depend on corpus size, so coverage is bought
    with conversations). Chunks are drawn uniformly in [chunk_min,
    chunk_max] and never longer than the corpus, so the mean chunk is
    min((chunk_min + chunk_max) / 2, corpus_tokens); conversations =
    ceil(coverage x corpus_tokens / mean chunk), steps = ceil(conversations /
    accum). ArgumentError for a coverage <= 0 or bad sizes."""
    if not coverage > 0:
        raise ArgumentError(f"budget (coverage) must be > 0, got {coverage}")
    if corpus_tokens < 1 or chunk_min < 1 or chunk_max < chunk_min or accum < 1 or max_a < 1:
        raise ArgumentError(f"budget_plan: need corpus_tokens, chunk_min, accum, max_a >= 1 and "
                            f"chunk_max >= chunk_min, got {corpus_tokens}, {chunk_min}, "
                            f"{chunk_max}, {accum}, {max_a}")
    mean = min((chunk_min + chunk_max) / 2, corpus_tokens)
    conversations = max(1, math.ceil(coverage * corpus_tokens / mean))
    steps = math.ceil(conversations / accum)
    return BudgetPlan(conversations, steps, mean, conversations * mean / corpus_tokens,
                      conversations * max_a / corpus_tokens)


def budget_steps(corpus_tokens, budget, chunk_min, chunk_max, accum):
    """Optimizer steps per pass for a coverage budget (budget_plan's steps)."""
    return budget_plan(corpus_tokens, budget, chunk_min, chunk_max, accum, 1).steps


#: conversations: synthesised (unique); steps: optimizer steps (all epochs);
#: seconds_per_conversation: wall time / conversations (replays included);
#: supervised: answer tokens over the synthesised conversations (coverage =
#: supervised / corpus tokens).
TrainReport = namedtuple("TrainReport", "cartridge conversations steps seconds "
                                        "seconds_per_conversation losses heldout timing "
                                        "supervised", defaults=(None,))


def train(model, corpus, p=256, steps=8, accum=4, gen_batch=None, lr=2e-3, seed=0,
          save=None, chunk_min=256, chunk_max=512, max_q=64, max_a=160, eval_every=0,
          n_eval=4, pack=True, checkpoint=False, init="corpus", progress=None,
          save_every=1, log=None, heldout_cache=None, epochs=1, recall=0.0,
          recall_q=(16, 48), state=None, spec_b=False, draft_ref=False, passage_qa=0.0,
          placement="random"):
    """Self-study training of a p-row cartridge for corpus (a Corpus, or
    paths). Returns a TrainReport. One optimizer step per `accum`
    conversations; conversations are synthesised `gen_batch` at a time (one
    lockstep decode batch and one teacher pass; default = accum). pack=True
    runs one packed forward/backward per group; pack=False one backward per
    conversation, weighted to the same gradient (flat memory). With save, the
    artifact is written atomically after every save_every steps and at the
    end, so an interruption leaves the last saved cartridge loadable.
    progress(step, info_dict) is called after every step (loss, conversations
    trained on with replays, synthesised = trained on in the first pass,
    generated = synthesised so far with the queue, epoch, seconds,
    heldout); log(str) for text.
    heldout_cache: where the eval_every held-out set is cached (heldout_set).
    epochs: passes over the synthesised conversations. The first pass
    synthesises steps * accum conversations; every further pass replays them
    in a new seeded order (the reference trains on a fixed synthetic set for
    a number of epochs; a replay costs only the training step, synthesis
    ~3x more, bench/README.md), so steps * epochs optimizer steps in all.
    recall / recall_q: the fraction of corpus-recall conversations and
    their prompt lengths (SelfStudy). passage_qa: the fraction of
    passage-question conversations (SelfStudy; recall + passage_qa <= 1).
    placement: "random" (the spec's chunk draw) or "cover" (SelfStudy).
    state: a directory for resumable snapshots (deg.cartridge_resume),
    written after every save_every steps; if it holds a snapshot of this
    run (same settings), training continues from it and ends bitwise equal
    to an uninterrupted run. epochs may grow between sittings.
    spec_b: bot B decodes speculatively (--spec-b; the same conversations).
    draft_ref: the artifact stores the corpus token ids for speculative
    serving (--draft-ref; Cartridge.draft_reference).
    """
    if not isinstance(model, Model):
        model = Model(model)
    if not isinstance(corpus, Corpus):
        corpus = load_corpus(model, corpus)
    if steps < 0 or accum < 1 or epochs < 1:
        raise ArgumentError(f"steps must be >= 0, accum >= 1 and epochs >= 1, got {steps}, "
                            f"{accum}, {epochs}")
    gen_batch = gen_batch or accum
    if p < 2:
        raise ArgumentError(f"p must be >= 2 (row 0 is frozen), got {p}")
    if init == "corpus":
        wrapped = chat_ids(model, [{"role": "system", "content": corpus.text}],
                           add_generation_prompt=False)
        if len(wrapped) < p:
            raise RangeError(f"corpus has {len(corpus)} tokens ({len(wrapped)} wrapped as a "
                             f"system message), fewer than p = {p}: use a smaller --p or a "
                             "longer corpus")
        cart = Cartridge.from_corpus(model, corpus.text, p)
    elif init == "random-text":
        cart = Cartridge.random_text(model, p, seed)
    else:
        raise ArgumentError(f"init must be 'corpus' or 'random-text', got {init!r}")
    kw = dict(chunk_min=chunk_min, chunk_max=chunk_max, max_q=max_q, max_a=max_a)
    if recall:
        kw.update(recall=recall, recall_q=recall_q)
    if passage_qa:
        kw.update(passage_qa=passage_qa)
    if placement != "random":  # the settings of runs made before placements existed
        kw.update(placement=placement)
    study = SelfStudy(model, corpus, seed=seed, spec_b=spec_b, **kw)
    total = steps * epochs
    timing = dict(study.timing, train=0.0, train_cpu=0.0, seconds=0.0)
    run, got, losses = None, None, []
    if state:
        run = RunState(state, dict(kw, p=p, steps=steps, accum=accum, gen_batch=gen_batch, lr=lr,
                                   seed=seed, pack=pack, init=init, model=_model_fingerprint(model),
                                   corpus=hashlib.sha256(array("i", corpus.ids).tobytes())
                                   .hexdigest()), _conv_to_json, _conv_from_json)
        got = run.load(model)
        if got:
            if got.state["step"] > total:
                raise ArgumentError(f"state {fspath(state)!r} is at step {got.state['step']}, "
                                    f"past this run's {total} (steps x epochs)")
            cart.close()
            cart = got.cartridge
            losses, timing = got.state["losses"], got.state["timing"]
            history = [tuple(h) for h in got.state["history"]]
    if draft_ref:  # after a resume too (the snapshot's cartridge may lack it)
        cart.set_draft_reference(corpus.ids)
    study.timing = {k: timing[k] for k in study.timing}
    # the run first: libdeg refuses a model it cannot train before any
    # conversation (held-out ones included) is synthesised
    driver = _Run(study, cart, steps, epochs, accum, gen_batch, pack, checkpoint, lr, seed, got)
    heldout = (heldout_set(model, corpus, seed + 0x5EED0000, n_eval, cache=heldout_cache, **kw)
               if eval_every else [])
    if not got:
        history = [(0, distill_loss(cart, heldout))] if heldout else []
    synth = list(got.conversations) if got else []  # Python copies, for snapshots
    t0 = time.perf_counter() - timing["seconds"]
    if save:
        cart.save(save)
    for step in range(driver.state().step + 1, total + 1):
        before = study.timing
        t1, c1 = time.perf_counter(), time.process_time()
        loss = driver.step()
        after = study.timing
        timing["train"] += time.perf_counter() - t1 - sum(
            after[k] - before[k] for k in ("generate", "teacher"))
        timing["train_cpu"] += time.process_time() - c1 - sum(
            after[k] - before[k] for k in ("generate_cpu", "teacher_cpu"))
        st = driver.state()
        synth += driver.conversations(len(synth), st.n_synthesised)
        losses.append(loss)
        info = {"loss": loss, "conversations": st.trained, "synthesised": st.n_seen,
                "generated": st.n_synthesised,
                "epoch": (step - 1) // steps + 1 if steps else 1,
                "seconds": time.perf_counter() - t0}
        if heldout and (step % eval_every == 0 or step == total):
            info["heldout"] = distill_loss(cart, heldout)
            history.append((step, info["heldout"]))
        if save and (step % save_every == 0 or step == total):
            cart.save(save)
        if run and (step % save_every == 0 or step == total):
            timing.update(study.timing, seconds=time.perf_counter() - t0)
            run.save(cart, synth, st.n_seen, done=st.trained, losses=losses, timing=timing,
                     history=history,
                     order=list(ffi.unpack(st.order, st.n_order)) if st.n_order else [],
                     rng_synthesis=list(st.rng_synthesis), rng_replay=list(st.rng_replay))
        if progress:
            progress(step, info)
    secs = time.perf_counter() - t0
    timing.update(study.timing)
    timing.pop("seconds", None)
    n = driver.state().n_seen
    seen = synth[:n] if len(synth) >= n else driver.conversations(0, n)
    return TrainReport(cart, n, total, secs, secs / n if n else float("nan"),
                       losses, history, timing, sum(c.n_supervised for c in seen))


class _Run:
    """A deg_selfstudy_run over study and cart (resumed from a snapshot's
    conversations and state when got is given)."""

    def __init__(self, study, cart, steps, epochs, accum, gen_batch, pack, checkpoint, lr, seed,
                 got):
        tp = lib.deg_selfstudy_default_train_params()
        tp.steps, tp.epochs, tp.accum, tp.gen_batch = steps, epochs, accum, gen_batch
        tp.pack, tp.checkpoint = 1 if pack else 0, 1 if checkpoint else 0
        tp.replay_seed = (seed ^ 0x2E91A7) & 0xFFFFFFFFFFFFFFFF
        tp.adam.lr = lr
        self.study, self.cart = study, cart  # both must outlive the run
        out = ffi.new("deg_selfstudy_run **")
        with cart._use() as cp:
            check(lib.deg_selfstudy_run_new(study._ptr, cp,
                                            ffi.new("deg_selfstudy_train_params *", tp), out))
        self._ptr = ffi.gc(out[0], lib.deg_selfstudy_run_free)
        if got:
            self._restore(got, accum)

    def _restore(self, got, accum):
        st, convs = got.state, got.conversations
        rs = ffi.new("deg_selfstudy_run_state *")
        rs.step, rs.trained = st["step"], st["done"]
        rs.n_synthesised, rs.n_seen = len(convs), got.n_seen
        rs.rng_synthesis = st["rng_synthesis"]
        rs.rng_replay = st["rng_replay"]
        order = ffi.new("size_t[]", st["order"] or [0])
        rs.order, rs.n_order = (order if st["order"] else ffi.NULL), len(st["order"])
        arr, keep = _to_c(convs)
        check(lib.deg_selfstudy_run_restore(self._ptr, rs, arr))
        del keep

    def step(self):
        loss = ffi.new("float *")
        with self.cart._use():
            check(lib.deg_selfstudy_run_step(self._ptr, loss))
        return loss[0]

    def state(self):
        st = ffi.new("deg_selfstudy_run_state *")
        lib.deg_selfstudy_run_get_state(self._ptr, st)
        return st

    def conversations(self, first, end):
        """Conversations [first, end) of the run, in synthesis order."""
        return [_from_c(lib.deg_selfstudy_run_conv(self._ptr, i)) for i in range(first, end)]


# --------------------------------------------------------------------------
# Serving
# --------------------------------------------------------------------------

def ask(model, question, cartridge=None, corpus=None, max_tokens=200, trunk=None, spec=False,
        draft_ref=None, spec_stats=None):
    """Greedy answer to question (a user message) behind the cartridge (a
    Cartridge, or a list of them: their composition), behind a given trunk
    (e.g. deg.Fleet.trunk; closed here), on the bare model (neither), or
    with corpus in context as a system message. Returns the answer text.
    spec=True decodes speculatively (--spec-serve; the same text), drafting
    from the prompt, the answer and draft_ref (a deg.spec.DraftRef, e.g.
    Cartridge.draft_reference); spec_stats (a list) receives its SpecStats."""
    msgs = [{"role": "user", "content": question}]
    if corpus is not None:
        text = corpus.text if isinstance(corpus, Corpus) else str(corpus)
        msgs.insert(0, {"role": "system", "content": text})
    ids = chat_ids(model, msgs)
    if trunk is None:
        if isinstance(cartridge, (list, tuple)):
            trunk = compose_trunk(cartridge)
        else:
            trunk = cartridge.trunk() if cartridge is not None else model.trunk()
    try:
        if spec:
            gen, st = _spec_answer(trunk, ids, draft_ref, max_tokens, _stop_ids(model))
            out = gen.ids
            if spec_stats is not None:
                spec_stats.append(st)
        else:
            f = trunk.fork()
            f.feed(ids)
            out = generate_forks([f], max_tokens, [0.0], seed=[0],
                                 stop_ids=_stop_ids(model))[0].ids
            f.close()
    finally:
        trunk.close()
    stops = _stop_ids(model)
    return model.detokenize([i for i in out if i not in stops], errors="replace").strip()


def _cartridge_ask(self, question, max_tokens=200):
    """Greedy answer behind this cartridge (deg.selfstudy.ask)."""
    return ask(self.model, question, cartridge=self, max_tokens=max_tokens)


Cartridge.ask = _cartridge_ask
