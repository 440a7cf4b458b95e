"""Model, Trunk, Fork: thin owners of the libdeg handles.

Handles are freed deterministically by close() / `with`, or when the object
is garbage-collected. A child keeps its parent alive (fork -> trunk ->
model), and closing a parent first closes its live children, so the C rule
"a trunk outlives its forks, a model its trunks" always holds.

Threads (the C rule in include/deg.h: a handle must not be freed while a call
uses it): every C call holds its handle for its duration, and close() while a
call on the handle or on one of its children runs in another thread raises
StateError and frees nothing (cancel the call with a deg.CancelToken, or wait
for it, then close). A call on a closed handle raises StateError.

Logits come back as array('f') (f32, no numpy needed); numpy users can wrap
them without a copy: numpy.frombuffer(a, dtype=numpy.float32).
"""
from __future__ import annotations

import threading
import weakref
from array import array
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from os import fspath
from typing import (Any, Iterable, Iterator, List, Mapping, Optional, Sequence, Tuple,
                    TypeVar, Union)

from ._native import check, ffi, lib, path_arg
from .errors import ArgumentError, StateError
from ._types import StrPath
from .limits import CancelToken, run_limits

Messages = Iterable[Mapping[str, Any]]
"""A chat: [{"role": "system" | "user" | "assistant", "content": str}, ...]."""

__all__ = ["load_model", "Model", "ModelInfo", "Trunk", "Fork", "Generation",
           "GenStats", "feed_forks", "generate_forks"]


def _ids_buffer(ids: Iterable[int]) -> Tuple[Any, int]:
    """(cdata int32_t[], count) for a sequence of token ids."""
    ids = list(ids)
    try:
        return ffi.new("int32_t[]", ids) if ids else ffi.NULL, len(ids)
    except (OverflowError, TypeError):
        raise ArgumentError("token ids must be integers in int32 range, got "
                            f"{next(i for i in ids if not isinstance(i, int) or not -2**31 <= i < 2**31)!r}") from None


def _floats(n: int) -> Tuple[array, Any]:
    """A zeroed array('f') of n floats and a float* into it."""
    a = array("f", bytes(4 * n))
    return a, (ffi.from_buffer("float[]", a) if n else ffi.NULL)


# Guards every handle's open/busy/closed state: _use() counts a call in,
# close() checks the whole subtree and frees under it (so no call can start on
# a handle between the check and the free).
_STATE = threading.RLock()
_H = TypeVar("_H", bound="_Handle")


class _Handle:
    """A C handle with a parent it depends on and children that depend on it."""

    _free: Optional[str] = None  # name of the C free function
    _ptr: Any = None   # stays None if the constructor's C call failed
    _busy = 0     # calls running on this handle (any thread)

    def __init__(self, ptr: Any, parent: Optional[_Handle] = None) -> None:
        self._ptr = ptr
        self._parent = parent
        self._children: weakref.WeakSet[_Handle] = weakref.WeakSet()
        if parent is not None:
            parent._children.add(self)

    @contextmanager
    def _use(self) -> Iterator[Any]:
        """Hold the handle for one C call (yields the pointer): close() from
        another thread raises StateError until the call returns."""
        with _STATE:
            if self._ptr is None:
                raise StateError(f"{type(self).__name__} is closed")
            self._busy += 1
        try:
            yield self._ptr
        finally:
            with _STATE:
                self._busy -= 1

    def _in_use(self) -> int:
        return self._busy + sum(c._in_use() for c in list(self._children))

    @property
    def closed(self) -> bool:
        return self._ptr is None

    def _live(self) -> Any:
        if self._ptr is None:
            raise StateError(f"{type(self).__name__} is closed")
        return self._ptr

    def close(self) -> None:
        """Free the C handle (and first those of live children). Idempotent.
        StateError (nothing freed) while a call on it or a child runs."""
        with _STATE:
            if self._ptr is None:
                return
            busy = self._in_use()
            if busy:
                raise StateError(f"{type(self).__name__} is in use by {busy} running call(s) "
                                 "in another thread; cancel them (deg.CancelToken) or wait "
                                 "for them, then close")
            for child in list(self._children):
                child.close()
            ptr, self._ptr = self._ptr, None
            assert self._free is not None
            getattr(lib, self._free)(ptr)
            self._parent = None

    def __enter__(self: _H) -> _H:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:
        # At interpreter exit the module globals may already be gone.
        try:
            self.close()
        except Exception:
            pass


@dataclass(frozen=True)
class ModelInfo:
    """Architecture hyper-parameters and special tokens (deg_model_info)."""
    arch: str
    name: str
    n_vocab: int
    n_embd: int
    n_layer: int
    n_head: int
    n_head_kv: int
    head_dim: int
    n_ff: int
    n_ctx_train: int
    rope_theta: float
    rms_eps: float
    tied_lm_head: bool
    bos_id: int
    eos_id: int
    chat_layout: str
    weight_bytes: int


@dataclass(frozen=True)
class GenStats:
    """Counts and timings of one generation (deg_gen_stats)."""
    prompt_tokens: int
    generated_tokens: int
    prefill_seconds: float
    decode_seconds: float
    stopped: bool  # True: a stop token ended it; False: max_tokens reached

    @property
    def prefill_tokens_per_second(self) -> float:
        return self.prompt_tokens / self.prefill_seconds if self.prefill_seconds > 0 else 0.0

    @property
    def decode_tokens_per_second(self) -> float:
        return (self.generated_tokens / self.decode_seconds
                if self.decode_seconds > 0 else 0.0)


@dataclass(frozen=True)
class Generation:
    """Result of generate(): the text (stop token excluded), every sampled id
    (stop token included, as the C API reports them) and the stats."""
    text: str
    ids: List[int] = field(default_factory=list)
    stats: Optional[GenStats] = None


def _stats(s: Any) -> GenStats:
    return GenStats(int(s.prompt_tokens), int(s.generated_tokens), float(s.prefill_seconds),
                    float(s.decode_seconds), bool(s.stopped))


def _chat_messages(messages: Messages) -> Tuple[Any, int, List[Any]]:
    """A deg_chat_message[] for [{"role", "content"}, ...]: (array, count,
    the cffi strings it borrows, to keep alive during the call)."""
    msgs = list(messages)
    arr = ffi.new("deg_chat_message[]", max(len(msgs), 1))
    keep: List[Any] = []
    for i, m in enumerate(msgs):
        try:
            role, content = m["role"], m["content"]
        except (KeyError, TypeError):
            raise ArgumentError(f"chat message {i} must be a dict with 'role' and "
                                f"'content', got {m!r}") from None
        r = ffi.new("char[]", str(role).encode())
        c = ffi.new("char[]", str(content).encode("utf-8", "surrogatepass"))
        keep += [r, c]
        arr[i].role, arr[i].content = r, c
    return arr, len(msgs), keep


def _sample_params(max_tokens: int, temperature: float, top_k: int, top_p: float, seed: int,
                   stop_ids: Optional[Iterable[int]], keep: List[Any]) -> Any:
    if max_tokens is None or int(max_tokens) <= 0:
        raise ArgumentError(f"max_tokens must be > 0, got {max_tokens!r}")
    if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed < 2**64:
        raise ArgumentError(f"seed must be an integer in [0, 2**64), got {seed!r}")
    if isinstance(top_k, bool) or not isinstance(top_k, int) or not 0 <= top_k < 2**31:
        raise ArgumentError(f"top_k must be an integer >= 0, got {top_k!r}")
    if int(max_tokens) >= 2**31:
        raise ArgumentError(f"max_tokens must be < 2**31, got {max_tokens!r}")
    p = ffi.new("deg_sample_params *", lib.deg_sample_params_default())
    p.temperature = float(temperature)
    p.top_k = int(top_k)
    p.top_p = float(top_p)
    p.seed = int(seed)
    p.max_tokens = int(max_tokens)
    if stop_ids is not None:
        buf, n = _ids_buffer(stop_ids)
        keep.append(buf)
        p.stop_ids, p.n_stop_ids = buf, n
    return p


#: Weight modes of load_model(weights=...): the DEG_WEIGHTS spellings and
#: their deg_model_params.weights values (include/deg_runtime.h).
WEIGHT_MODES = {"f32": lib.DEG_WEIGHTS_F32, "native": lib.DEG_WEIGHTS_NATIVE,
                "native-f32act": lib.DEG_WEIGHTS_NATIVE_F32ACT}


class Model(_Handle):
    """A loaded model (deg_model): immutable, shareable across threads.

    weights: how the weight matrices are held (deg_model_params.weights):
    "native" (the GGUF's quantized blocks resident, 8-bit activations:
    llama.cpp's numerics, the fast mode), "native-f32act" (the same blocks,
    f32 activations: the f32 path's logits up to summation order), "f32"
    (dequantized to f32 at load: transformers' f32 numerics). None:
    $DEG_WEIGHTS if set, else "native". ArgumentError for another value."""

    _free = "deg_model_free"

    def __init__(self, path: StrPath, weights: Optional[str] = None) -> None:
        out = ffi.new("deg_model **")
        if weights is None:
            check(lib.deg_model_load(path_arg(path), out))
        else:
            if weights not in WEIGHT_MODES:
                raise ArgumentError(f"weights={weights!r}: expected one of "
                                    + ", ".join(repr(w) for w in WEIGHT_MODES))
            params = ffi.new("deg_model_params *", lib.deg_model_default_params())
            params.weights = WEIGHT_MODES[weights]
            check(lib.deg_model_load_with_params(path_arg(path), params, out))
        super().__init__(out[0])
        self.path = fspath(path)
        self._info: Optional[ModelInfo] = None

    def __repr__(self) -> str:
        state = "closed" if self.closed else self.info.arch
        return f"<deg.Model {self.path!r} {state}>"

    @property
    def info(self) -> ModelInfo:
        """ModelInfo of the model."""
        if self._info is None:
            i = ffi.new("deg_model_info *")
            with self._use() as _p:
                check(lib.deg_model_get_info(_p, i))
            def s(p: Any) -> str:
                return ffi.string(p).decode("utf-8", "replace") if p != ffi.NULL else ""
            self._info = ModelInfo(
                s(i.arch), s(i.name), i.n_vocab, i.n_embd, i.n_layer, i.n_head, i.n_head_kv,
                i.head_dim, i.n_ff, i.n_ctx_train, i.rope_theta, i.rms_eps,
                bool(i.tied_lm_head), i.bos_id, i.eos_id, s(i.chat_layout), i.weight_bytes)
        return self._info

    # --- tokenizer ---------------------------------------------------------

    def stop_ids(self) -> List[int]:
        """The library's one stop-token rule (deg_model_stop_ids): the
        model's EOS, and <|im_end|> for chat-layout models when it is
        another token. A list of ids, EOS first."""
        ids = ffi.new("int32_t[4]")
        n = ffi.new("size_t *")
        with self._use() as ptr:
            check(lib.deg_model_stop_ids(ptr, ids, 4, n))
        return [ids[i] for i in range(n[0])]

    def tokenize(self, text: Union[str, bytes, bytearray, memoryview], special: bool = False,
                 drop_missing_bytes: bool = False) -> List[int]:
        """Token ids of text (str or UTF-8 bytes). With special=True, special
        tokens written in the text ("<|im_start|>") become their ids. No BOS.
        A byte the vocabulary has no token for (SmolLM2: 0x04, 0x1d, ...)
        raises UnsupportedError, or with drop_missing_bytes=True is dropped as
        Hugging Face tokenizers drops it (the same ids; deg.fill reads
        documents this way)."""
        if isinstance(text, str):
            data = text.encode("utf-8", "surrogatepass")
        elif isinstance(text, (bytes, bytearray, memoryview)):
            data = bytes(text)
        else:  # bytes(5) would be five NUL bytes
            raise ArgumentError(f"text must be str or bytes, got {type(text).__name__}")
        n = ffi.new("size_t *")
        cap = len(data) + 8  # byte-level BPE: at most one id per byte
        with self._use() as ptr:
            while True:
                ids = ffi.new("int32_t[]", cap)
                fl = ((lib.DEG_TOKENIZE_SPECIAL if special else 0)
                      | (lib.DEG_TOKENIZE_DROP_MISSING_BYTES if drop_missing_bytes else 0))
                st = lib.deg_tokenize_ex(ptr, data, len(data), fl, ids, cap, n)
                if st == lib.DEG_ERR_RANGE and n[0] > cap:
                    cap = n[0]
                    continue
                check(st)
                return list(ffi.unpack(ids, n[0]))

    def detokenize_bytes(self, ids: Iterable[int]) -> bytes:
        """The exact bytes of ids (may end in the middle of a UTF-8 sequence)."""
        buf_ids, count = _ids_buffer(ids)
        n = ffi.new("size_t *")
        cap = 8 * count + 16
        with self._use() as ptr:
            while True:
                buf = ffi.new("char[]", cap)
                st = lib.deg_detokenize(ptr, buf_ids, count, buf, cap, n)
                if st == lib.DEG_ERR_RANGE and n[0] > cap:
                    cap = n[0]
                    continue
                check(st)
                return ffi.unpack(buf, n[0])

    def detokenize(self, ids: Iterable[int], errors: str = "strict") -> str:
        """Text of ids; `errors` as in bytes.decode (a sequence cut mid-
        character raises UnicodeDecodeError with "strict")."""
        return self.detokenize_bytes(ids).decode("utf-8", errors)

    def chat_format(self, messages: Messages, add_generation_prompt: bool = True) -> str:
        """Render [{"role": ..., "content": ...}, ...] in the model's chat
        layout (ChatML for SmolLM2/Qwen3) as text (deg_chat_format). To feed
        the model, use chat_tokenize (contents stay plain text)."""
        arr, n, _keep = _chat_messages(messages)
        out = ffi.new("char **")
        with self._use() as ptr:
            check(lib.deg_chat_format(ptr, arr, n, 1 if add_generation_prompt else 0, out))
        try:
            return ffi.string(out[0]).decode("utf-8", "surrogateescape")
        finally:
            lib.deg_free(out[0])

    def chat_tokenize(self, messages: Messages, add_generation_prompt: bool = True,
                      drop_missing_bytes: bool = False) -> List[int]:
        """Token ids of a chat in the model's chat layout (deg_chat_tokenize,
        the library's one chat tokenization): special tokens are parsed in
        the layout and never inside message contents, so a message holding
        "<|im_start|>" cannot forge a turn; otherwise the ids equal Hugging
        Face's apply_chat_template(..., tokenize=True)."""
        arr, n_msgs, keep = _chat_messages(messages)
        fl = lib.DEG_TOKENIZE_DROP_MISSING_BYTES if drop_missing_bytes else 0
        n = ffi.new("size_t *")
        cap = 64 + sum(len(k) for k in keep)  # at most one id per content byte
        with self._use() as ptr:
            while True:
                ids = ffi.new("int32_t[]", cap)
                st = lib.deg_chat_tokenize(ptr, arr, n_msgs, 1 if add_generation_prompt else 0,
                                           fl, ids, cap, n)
                if st == lib.DEG_ERR_RANGE and n[0] > cap:
                    cap = n[0]
                    continue
                check(st)
                return list(ffi.unpack(ids, n[0]))

    # --- generation --------------------------------------------------------

    def generate(self, prompt: Union[str, Sequence[Mapping[str, Any]], Sequence[int]],
                 max_tokens: int = 256, temperature: float = 0.0, top_k: int = 0,
                 top_p: float = 1.0, seed: int = 0, stop_ids: Optional[Iterable[int]] = None,
                 special: bool = False, cancel: Optional[CancelToken] = None,
                 deadline_ms: Optional[int] = None) -> Generation:
        """Generate a continuation.

        prompt: a str (tokenized as is; special=True parses special tokens),
        a list of chat messages [{"role", "content"}] (rendered with
        chat_tokenize with the assistant header), or a list of token ids.
        temperature 0 is greedy; top_k 0 and top_p 1 are off; the same seed
        gives the same text. stop_ids: None = the model's EOS.
        cancel: a deg.CancelToken (cancel() from another thread -> CancelledError);
        deadline_ms: wall-clock budget (LimitError when it passes; None =
        libdeg's default, deg.limits.DEFAULT_DEADLINE_MS = 10 minutes; 0 =
        none). Both are checked between prefill passes and before every decode
        step.
        """
        if isinstance(prompt, str):
            ids = self.tokenize(prompt, special=special)
        elif prompt and all(isinstance(m, dict) for m in prompt):
            ids = self.chat_tokenize(prompt)  # type: ignore[arg-type]
        else:
            ids = [int(t) for t in prompt]  # type: ignore[arg-type]
        keep: List[Any] = []
        params = _sample_params(max_tokens, temperature, top_k, top_p, seed, stop_ids, keep)
        pbuf, n_prompt = _ids_buffer(ids)
        out = ffi.new("int32_t[]", params.max_tokens)
        n_out = ffi.new("size_t *")
        stats = ffi.new("deg_gen_stats *")
        lim = run_limits(cancel, deadline_ms)
        with self._use() as ptr:
            check(lib.deg_generate_ex(ptr, pbuf, n_prompt, params, out, params.max_tokens,
                                      n_out, stats, lim))
        return self._generation(list(ffi.unpack(out, n_out[0])), stats)

    def _generation(self, out_ids: List[int], stats: Any) -> Generation:
        st = _stats(stats)
        text_ids = out_ids[:-1] if st.stopped and out_ids else out_ids
        return Generation(self.detokenize(text_ids, errors="replace"), out_ids, st)

    # --- trunks ------------------------------------------------------------

    def trunk(self, ids: Optional[Sequence[int]] = None) -> Trunk:
        """A new Trunk of this model, prefilled with ids if given."""
        t = Trunk(self)
        if ids:
            t.prefill(ids, logits=None)
        return t


def load_model(path: StrPath, weights: Optional[str] = None) -> Model:
    """Load a GGUF file or a Hugging Face model directory (deg_model_load).
    weights: "native", "native-f32act" or "f32" (Model); None = $DEG_WEIGHTS,
    else "native". Raises DegIOError, FormatError, UnsupportedError
    with the C message, ArgumentError for an unknown weights value."""
    return Model(path, weights)


class Trunk(_Handle):
    """A prefilled prefix state (per-layer K/V) that forks attend to."""

    _free = "deg_trunk_free"

    def __init__(self, model: Model) -> None:
        out = ffi.new("deg_trunk **")
        with model._use() as _p:
            check(lib.deg_trunk_new(_p, out))
        super().__init__(out[0], model)
        self.model = model

    def __len__(self) -> int:
        with self._use() as _p:
            return int(lib.deg_trunk_len(_p))

    def prefill(self, ids: Iterable[int], logits: Optional[str] = "last") -> Optional[array]:
        """Append ids. logits: "last" -> array('f') [n_vocab] after the last
        id; "all" -> array('f') [len(ids) * n_vocab], row i after id i;
        None -> nothing. StateError while forks of the trunk exist."""
        buf, n = _ids_buffer(ids)
        nv = self.model.info.n_vocab
        out: Optional[array] = None
        all_ptr, last_ptr = ffi.NULL, ffi.NULL
        if logits == "all":
            out, all_ptr = _floats(n * nv)
        elif logits == "last":
            out, last_ptr = _floats(nv)
        elif logits is not None:
            raise ArgumentError(f"logits must be 'last', 'all' or None, got {logits!r}")
        with self._use() as ptr:
            check(lib.deg_trunk_prefill(ptr, buf, n, all_ptr, last_ptr))
        return out

    def fork(self) -> Fork:
        """A new Fork of this trunk (no own tokens yet)."""
        return Fork(self)


class Fork(_Handle):
    """A continuation of a trunk: attends to it by reference, plus its own tokens."""

    _free = "deg_fork_free"

    def __init__(self, trunk: Trunk) -> None:
        out = ffi.new("deg_fork **")
        with trunk._use() as _p:
            check(lib.deg_fork_new(_p, out))
        super().__init__(out[0], trunk)
        self.trunk = trunk

    def __len__(self) -> int:
        """Own tokens fed so far (total length = len(trunk) + len(fork))."""
        with self._use() as _p:
            return int(lib.deg_fork_len(_p))

    def feed(self, ids: Iterable[int], logits: Optional[str] = None) -> Optional[array]:
        """Feed ids. logits: None, "all" (array('f') [len(ids) * n_vocab])."""
        return feed_forks([self], [ids], logits=logits)[0]

    def truncate(self, n: int) -> None:
        """Rewind to the first n own tokens (deg_fork_truncate): the later
        ones are dropped as if never fed (RangeError if n > len(self))."""
        with self._use() as _p:
            check(lib.deg_fork_truncate(_p, int(n)))

    def logits(self) -> array:
        """array('f') [n_vocab]: logits after the fork's last token."""
        out, ptr = _floats(self.trunk.model.info.n_vocab)
        with self._use() as _p:
            check(lib.deg_fork_logits(_p, ptr))
        return out

    def hidden(self, first: int, n: int) -> array:
        """array('f') [n * n_embd]: final-norm hidden states of own tokens
        [first, first + n)."""
        out, ptr = _floats(int(n) * self.trunk.model.info.n_embd)
        with self._use() as _p:
            check(lib.deg_fork_hidden(_p, int(first), int(n), ptr))
        return out

    def generate(self, max_tokens: int = 256, temperature: float = 0.0, top_k: int = 0,
                 top_p: float = 1.0, seed: int = 0, stop_ids: Optional[Iterable[int]] = None,
                 cancel: Optional[CancelToken] = None,
                 deadline_ms: Optional[int] = None) -> Generation:
        """Decode from the fork's current state (deg_forks_generate_ex, one row);
        cancel / deadline_ms as in Model.generate."""
        return generate_forks([self], max_tokens, temperature, top_k, top_p, seed, stop_ids,
                              cancel=cancel, deadline_ms=deadline_ms)[0]


def _gen_outputs(n: int, max_tokens: int) -> Tuple[List[Any], Any, Any, Any]:
    """The C outputs of a lockstep generate over n forks: per-fork id arrays
    [max_tokens] (kept alive by the list), their pointer array, the id
    counts and the deg_gen_stats."""
    bufs = [ffi.new("int32_t[]", int(max_tokens)) for _ in range(n)]
    return bufs, ffi.new("int32_t *[]", bufs), ffi.new("size_t[]", n), \
        ffi.new("deg_gen_stats[]", n)


def generate_forks(forks: Iterable[Fork], max_tokens: int = 256,
                   temperature: Union[float, Sequence[float]] = 0.0, top_k: int = 0,
                   top_p: Union[float, Sequence[float]] = 1.0,
                   seed: Union[int, Sequence[int]] = 0, stop_ids: Optional[Iterable[int]] = None,
                   cancel: Optional[CancelToken] = None,
                   deadline_ms: Optional[int] = None) -> List[Generation]:
    """Decode several forks of one model together in lockstep
    (deg_forks_generate_ex): [Generation], row i from forks[i]. temperature,
    top_p and seed: one value for every row or a list with one per row. A row's ids do
    not depend on the other rows (bitwise), so this equals calling
    Fork.generate on each. Every generated id but the last is fed to its fork.
    cancel (a deg.CancelToken) / deadline_ms stop it between decode steps
    (CancelledError / LimitError; deadline_ms None = the default 10 minutes,
    0 = none)."""
    rows = list(forks)
    n = len(rows)
    if n == 0:
        return []
    def per_row(v: Any) -> List[Any]:
        return list(v) if isinstance(v, (list, tuple)) else [v] * n
    temps, seeds, top_ps = per_row(temperature), per_row(seed), per_row(top_p)
    if len(temps) != n or len(seeds) != n or len(top_ps) != n:
        raise ArgumentError(f"{n} forks but {len(temps)} temperatures, {len(seeds)} seeds and "
                            f"{len(top_ps)} top_p values")
    keep: List[Any] = []
    params = ffi.new("deg_sample_params[]", n)
    for i in range(n):
        params[i] = _sample_params(max_tokens, temps[i], top_k, top_ps[i], seeds[i], stop_ids,
                                   keep)[0]
    bufs, outs, n_out, stats = _gen_outputs(n, max_tokens)
    lim = run_limits(cancel, deadline_ms)
    with ExitStack() as held:
        cforks = ffi.new("deg_fork *[]", [held.enter_context(f._use()) for f in rows])
        check(lib.deg_forks_generate_ex(cforks, n, params, outs, n_out, stats, lim))
    model = rows[0].trunk.model
    return [model._generation(list(ffi.unpack(bufs[i], n_out[i])), stats[i]) for i in range(n)]


def feed_forks(forks: Iterable[Fork], ids_lists: Iterable[Iterable[int]],
               logits: Optional[str] = None) -> List[Optional[array]]:
    """Feed several forks as rows of one batch (deg_forks_feed). Row i gets
    ids_lists[i] (may be empty). logits=None -> list of None; "all" -> per
    row array('f') [len(ids) * n_vocab]. Each row's numbers are independent
    of the other rows (bitwise)."""
    rows, id_rows = list(forks), [list(x) for x in ids_lists]
    if len(rows) != len(id_rows):
        raise ArgumentError(f"{len(rows)} forks but {len(id_rows)} id lists")
    if logits not in (None, "all"):
        raise ArgumentError(f"logits must be 'all' or None, got {logits!r}")
    n = len(rows)
    if n == 0:
        return []
    keep = [_ids_buffer(x)[0] for x in id_rows]
    cids = ffi.new("int32_t *[]", keep)
    cn = ffi.new("size_t[]", [len(x) for x in id_rows])
    outs: List[Optional[array]] = [None] * n
    clog = ffi.NULL
    if logits == "all":
        clog = ffi.new("float *[]", n)
        for i, f in enumerate(rows):
            outs[i], clog[i] = _floats(len(id_rows[i]) * f.trunk.model.info.n_vocab)
    with ExitStack() as held:
        cforks = ffi.new("deg_fork *[]", [held.enter_context(f._use()) for f in rows])
        check(lib.deg_forks_feed(cforks, n, cids, cn, clog))
    return outs
