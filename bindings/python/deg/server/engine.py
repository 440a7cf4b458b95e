"""The server's worker threads: every libdeg call of the server runs on one of them.

Fills run on fill_workers threads, each with its own checkpoint handle over the
one model (a checkpoint runs one fill at a time; the model is shared): a worker
that is free takes the fill jobs queued within the batch window (up to
max_batch) and runs them through deg_fill_many (§9.1 batching: each response is
bitwise the one deg_fill gives alone, §10). So one oversized fill occupies one
worker until it ends or its deadline passes, and a normal request that arrives
meanwhile runs on another (no head-of-line blocking, issue 19); with every
worker busy, requests queue, and more than max_pending queued jobs are refused
with 429. Chats run on their own thread, never behind a fill. A LimitError
that the server's own limit raised names the deg serve flag that lifts it
(server_limit_message). Chat streams decode in lockstep: each step feeds
every active stream's last token as one row of ONE deg_forks_feed batch, then
samples one token per row (deg_forks_generate, max_tokens 1, each row its own
seeded stream), so concurrent chats share every weight pass. Between steps the
worker takes new fills and streams, and drops streams whose client went away
(cancellation between decode steps); a fill whose client went away is skipped
while queued and stopped while running (its own cancel token in deg_fill_many_ex:
the other requests of the batch are unaffected). More than max_pending queued
jobs -> Overloaded (HTTP 429).

--spec-serve (spec cartridges.md, "--spec-serve"): a greedy stream (temperature 0)
decodes speculatively from its second id on: each step it feeds its carry plus up
to 8 drafted ids (from its own prompt and reply, and the prefix's draft reference:
the cartridge's stored corpus ids, or the selected fleet documents' composed in the
library) as one ragged row, and keeps the drafts equal to the argmax (deg.spec.
spec_step; the lean acceptance gate turns drafting off below 35% over 16 drafted
ids, 32-id re-probe). Its ids are those of plain greedy decoding byte for byte;
the sampled rows' pending ids ride in the same feed (one weight pass a step).

Conversations: a finished chat's fork (the K/V of its prompt and reply) is kept
in a small LRU cache; a later request whose prompt ids start with exactly those
ids continues that fork, feeding only the new tokens (reported as
prompt_tokens_details.cached_tokens). Behind a cartridge every conversation is
a fork of the cartridge's trunk: it attends to the cartridge rows by reference
and its tokens sit at positions p... as in training.
"""
import collections
import concurrent.futures
import threading
import time

from ..selfstudy import _stop_ids, chat_ids
from ..errors import CancelledError, DegError, InternalError, LimitError
from ..fill import fill_many
from ..limits import CancelToken, flag_hint, limits_of
from ..model import feed_forks, generate_forks
from ..spec import SpecState, spec_step

__all__ = ["Engine", "Overloaded", "ChatJob", "ChatError", "server_limit_message"]

_MASK64 = (1 << 64) - 1


def server_limit_message(msg):
    """A LimitError message of a fill the server ran, with its lift hint in the
    server's terms: libdeg says how to lift a default or caller limit with the C
    field / Python keyword; over HTTP the server set it, so the hint names the
    deg serve flag instead (deg.limits.flag_hint). A limit the request's own
    options set is left as is (the request can loosen it)."""
    return flag_hint(msg, "a limit of this server: the operator starts deg serve with",
                     "; a request's options can only tighten it")


class Overloaded(Exception):
    """More than max_pending jobs queued (HTTP 429); retry_after in seconds."""

    def __init__(self, retry_after=1):
        super().__init__("server busy")
        self.retry_after = retry_after


class ChatError(Exception):
    """A chat request the worker refused (HTTP 400): message, param, code."""

    def __init__(self, message, param=None, code=None):
        super().__init__(message)
        self.param, self.code = param, code


class _FillJob:
    __slots__ = ("request", "future", "t", "cancelled", "token")

    def __init__(self, request):
        self.request = request
        self.future = concurrent.futures.Future()
        self.t = time.monotonic()
        self.cancelled = False
        self.token = CancelToken()

    def cancel(self):
        """From any thread: a queued job is skipped, a running one stops at the next
        unit of work (deg_fill_many_ex's per-request cancel token) and fails alone."""
        self.cancelled = True
        self.token.cancel()


class ChatJob:
    """One chat completion. emit(event) is called from the worker thread with
    ("start", {prompt_tokens, cached_tokens}), ("delta", text), ("done",
    {finish_reason, completion_tokens, prompt_tokens, cached_tokens}) or
    ("error", exception); set .cancelled to stop it between decode steps."""

    def __init__(self, target, messages, max_tokens, temperature, top_p, seed, stops, emit):
        self.target, self.messages = target, messages
        self.max_tokens, self.temperature, self.top_p, self.seed = (max_tokens, temperature,
                                                                     top_p, seed)
        self.stops = list(stops or [])
        self.emit = emit
        self.cancelled = False
        self.t = time.monotonic()
        # worker state
        self.fork = None
        self.ids = []          # ids the fork holds (prompt + fed reply tokens)
        self.pending = None    # sampled id not yet fed
        self.n_gen = 0
        self.step = 0
        self.buf = b""         # reply bytes not yet emitted
        self.text = ""         # emitted text
        self.prompt_tokens = self.cached_tokens = 0
        self.cache_target = target
        self.fleet = None      # fleet targets: {selected, selection}
        self.spec_ref = None   # --spec-serve: the prefix's draft reference (or None)
        self.use_spec = False  # greedy under --spec-serve: decoded speculatively
        self.spec = None       # its deg.spec.SpecState (from the second id on)


class Engine:
    """ckpt: deg.Checkpoint (fills); model: its deg.Model; trunks: {target name:
    deg.Trunk} chat prefixes (the plain model's is empty, a cartridge's holds its
    rows); fleets: {target name: FleetTarget} (the prefix is the composition its
    selection picks per conversation); n_ctx: positions a conversation may use
    (prefix + prompt + reply); limits: the work limits of every fill (deg.fill's
    limits mapping: deadline_ms counted from the start of the fill's batch,
    max_fields, max_fork_tokens; None = libdeg's defaults), which a request's
    options can only tighten."""

    def __init__(self, ckpt, model, trunks, batch_window=0.005, max_batch=16, max_pending=256,
                 chat_cache=16, n_ctx=None, cache_tokens=32768, fleets=None, limits=None,
                 spec_serve=False, draft_refs=None):
        # ckpt: one deg.Checkpoint, or a list of them (one fill worker each)
        self.ckpts = list(ckpt) if isinstance(ckpt, (list, tuple)) else [ckpt]
        self.ckpt, self.model, self.trunks = self.ckpts[0], model, dict(trunks)
        self.limits = limits_of(limits)
        self.fleets = dict(fleets or {})  # target name -> server.fleet.FleetTarget
        self.spec_serve = bool(spec_serve)
        self.draft_refs = dict(draft_refs or {})  # target name -> deg.spec.DraftRef
        self.window, self.max_batch, self.max_pending = batch_window, max_batch, max_pending
        self.chat_cache = chat_cache
        self.cache_tokens = cache_tokens  # K/V rows all cached conversations may hold
        self._cached_tokens = 0
        self.n_ctx = n_ctx or model.info.n_ctx_train
        self._stop_list = _stop_ids(model)  # the library's rule: EOS, <|im_end|>
        self._stop_ids = set(self._stop_list)
        self._cv = threading.Condition()
        self._fills = collections.deque()
        self._waiting = collections.deque()   # chats not admitted yet
        self._streams = []                     # admitted chats (worker only)
        self._cache = collections.OrderedDict()  # (target, ids tuple) -> fork
        self._stopping = False
        self.stats = {"fill_batches": 0, "fill_jobs": 0, "fills_running": 0, "fill_cancelled": 0,
                      "decode_steps": 0, "decode_rows": 0,
                      "chat_streams": 0, "chat_cancelled": 0, "cache_hits": 0,
                      "spec_streams": 0, "spec_drafted": 0, "spec_accepted": 0,
                      "spec_gate_offs": 0}
        self._thread = threading.Thread(target=self._run, name="deg-engine", daemon=True)
        self._thread.start()
        self._fill_threads = [threading.Thread(target=self._fill_loop, args=(ck,), daemon=True,
                                               name=f"deg-fill-{i}")
                              for i, ck in enumerate(self.ckpts)]
        for t in self._fill_threads:
            t.start()

    # ----------------------------------------------------------- submission
    def _pending(self):
        return len(self._fills) + len(self._waiting)

    def _enqueue(self, queue, job):
        with self._cv:
            if self._stopping:
                raise Overloaded(5)
            if self._pending() >= self.max_pending:
                raise Overloaded(1)
            queue.append(job)
            self._cv.notify_all()
        return job

    def submit_fill(self, request):
        """Queue a fill request (dict or JSON bytes); returns the job, whose .future
        resolves to the §8 response or the deg exception. Raises Overloaded."""
        return self._enqueue(self._fills, _FillJob(request))

    def submit_chat(self, job):
        """Queue a ChatJob (events go to job.emit). Raises Overloaded."""
        return self._enqueue(self._waiting, job)

    def wake(self):
        with self._cv:
            self._cv.notify_all()

    def health(self):
        with self._cv:
            s = dict(self.stats)
            s["queue_depth"] = self._pending()
            s["active_streams"] = len(self._streams)
            s["cached_conversations"] = len(self._cache)
            for name, ft in self.fleets.items():
                s.setdefault("fleets", {})[name] = dict(ft.stats)
        s["fill_workers"] = len(self.ckpts)
        s["mean_batch_size"] = s["fill_jobs"] / s["fill_batches"] if s["fill_batches"] else 0.0
        s["mean_decode_batch"] = (s["decode_rows"] / s["decode_steps"]
                                  if s["decode_steps"] else 0.0)
        return s

    def stop(self, timeout=None):
        """Stop accepting, finish every queued and running job, end the thread."""
        with self._cv:
            self._stopping = True
            self._cv.notify_all()
        for t in self._fill_threads:
            t.join(timeout)
        self._thread.join(timeout)
        for f in self._cache.values():
            f.close()
        self._cache.clear()
        self._cached_tokens = 0

    # ---------------------------------------------------------------- loop
    def _run(self):
        """The chat thread: admits new streams and decodes every active one a step."""
        while True:
            with self._cv:
                while not (self._waiting or self._streams or self._stopping):
                    self._cv.wait()
                if self._stopping and not (self._waiting or self._streams):
                    return
                admit = []
                while self._waiting and len(self._streams) + len(admit) < self.max_batch:
                    admit.append(self._waiting.popleft())
            try:
                if admit:
                    self._admit(admit)
                if self._streams:
                    self._step()
            except Exception as e:  # a bug must fail its requests, never stop the worker
                self._fail_chats(admit, InternalError(f"server worker: {e!r}"))

    def _take_fills(self):
        """(under self._cv) The batch a free fill worker runs: the jobs queued
        within the batch window of the first, up to max_batch; cancelled ones
        are dropped. None once stopping with nothing queued."""
        while not (self._fills or self._stopping):
            self._cv.wait()
        if not self._fills:
            return None
        deadline = self._fills[0].t + self.window
        while (len(self._fills) < self.max_batch and not self._stopping
               and time.monotonic() < deadline):
            self._cv.wait(max(0.0, deadline - time.monotonic()))
        batch = []
        while self._fills and len(batch) < self.max_batch:
            j = self._fills.popleft()
            if not j.cancelled:
                batch.append(j)
            else:
                j.future.cancel()
        return batch

    def _fill_loop(self, ckpt):
        """One fill worker: its own checkpoint handle, one batch at a time."""
        while True:
            with self._cv:
                batch = self._take_fills()
            if batch is None:
                return
            try:
                if batch:
                    self._run_fills(ckpt, batch)
            except Exception as e:  # a bug must fail its requests, never stop the worker
                self._fail_fills(batch, InternalError(f"server worker: {e!r}"))

    @staticmethod
    def _fail_fills(batch, err):
        for j in batch:
            if not j.future.done():
                j.future.set_exception(err)

    def _fail_chats(self, admit, err):
        for j in list(admit) + list(self._streams):
            if j.fork is not None:
                j.fork.close()
                j.fork = None
            if j.spec is not None:
                j.spec.close()
                j.spec = None
            j.emit(("error", err))
        self._streams = []

    def _run_fills(self, ckpt, batch):
        with self._cv:
            self.stats["fills_running"] += len(batch)
        try:
            out = fill_many([dict(j.request, cancel=j.token, limits=self.limits)
                             if isinstance(j.request, dict)
                             else {"request": j.request, "cancel": j.token, "limits": self.limits}
                             for j in batch], model=ckpt)
        except Exception as e:  # a runtime failure (e.g. out of memory) fails the batch
            out = [e] * len(batch)
        for r in out:
            if isinstance(r, LimitError):
                r.message = server_limit_message(r.message)
                r.args = (r.message,)
        with self._cv:
            self.stats["fills_running"] -= len(batch)
            self.stats["fill_batches"] += 1
            self.stats["fill_jobs"] += len(batch)
            self.stats["fill_cancelled"] += sum(isinstance(r, CancelledError) for r in out)
        for j, r in zip(batch, out):
            if isinstance(r, BaseException):
                j.future.set_exception(r)
            else:
                j.future.set_result(r)

    # ---------------------------------------------------------------- chat
    def _prefix(self, job):
        """The trunk job's conversation continues; sets job.cache_target (the
        conversation cache's key: the target, and for a fleet its selection) and
        job.fleet ({selected: document names, selection: how} or None)."""
        ft = self.fleets.get(job.target)
        job.use_spec = self.spec_serve and job.temperature == 0.0
        if ft is None:
            job.cache_target = job.target
            job.spec_ref = self.draft_refs.get(job.target) if job.use_spec else None
            return self.trunks[job.target]
        sel, how = ft.select(job.messages)
        job.cache_target = (job.target, sel)
        job.fleet = {"selected": ft.doc_names(sel), "selection": how}
        trunk = ft.trunk(sel)
        job.spec_ref = ft.draft_ref(sel) if job.use_spec else None
        return trunk

    def _take_cached(self, target, prompt):
        best = None
        for key in self._cache:
            t, ids = key
            if t == target and len(ids) <= len(prompt) and tuple(prompt[:len(ids)]) == ids:
                if best is None or len(ids) > len(best[1]):
                    best = key
        if best is None:
            return None, 0
        self._cached_tokens -= len(best[1])
        return self._cache.pop(best), len(best[1])

    def _admit(self, jobs):
        rows, feeds = [], []
        for job in jobs:
            if job.cancelled:
                self.stats["chat_cancelled"] += 1
                continue
            try:
                prompt = chat_ids(self.model, job.messages)
                trunk = self._prefix(job)
                room = self.n_ctx - len(trunk) - len(prompt)
                if room < 1:
                    raise ChatError(f"This model's context is {self.n_ctx} tokens; the prompt "
                                    f"takes {len(prompt)} (+ {len(trunk)} prefix rows)",
                                    "messages", "context_length_exceeded")
                if job.max_tokens is None:
                    job.max_tokens = min(1024, room)
                elif job.max_tokens > room:
                    raise ChatError(f"max_tokens {job.max_tokens} + the prompt's {len(prompt)} "
                                    f"tokens exceed the context of {self.n_ctx}",
                                    "max_tokens", "context_length_exceeded")
                fork, n_cached = self._take_cached(job.cache_target, prompt)
                if fork is None:
                    fork = trunk.fork()
                else:
                    self.stats["cache_hits"] += 1
            except (ChatError, DegError) as e:
                job.emit(("error", e))
                continue
            job.fork, job.ids = fork, list(prompt)
            job.prompt_tokens, job.cached_tokens = len(prompt), n_cached
            rows.append(job)
            feeds.append(prompt[n_cached:])
        if not rows:
            return
        try:  # the new prompts' prefill: one batch, each row its own fork
            feed_forks([j.fork for j in rows], feeds)
        except DegError as e:
            for j in rows:
                self._finish(j, error=e)
            return
        for j in rows:
            self.stats["chat_streams"] += 1
            j.emit(("start", {"prompt_tokens": j.prompt_tokens,
                              "cached_tokens": j.cached_tokens, "fleet": j.fleet}))
            self._streams.append(j)

    def _step(self):
        live = []
        for j in self._streams:
            if j.cancelled:
                self.stats["chat_cancelled"] += 1
                self._finish(j, cancelled=True)
            else:
                live.append(j)
        self._streams = live
        if not live:
            return
        spec = [j for j in live if j.use_spec and j.pending is not None]
        plain = [j for j in live if not (j.use_spec and j.pending is not None)]
        try:
            # one weight pass: the plain rows' pending ids ride in the
            # speculative round's feed when there is one
            fed = [j for j in plain if j.pending is not None]
            got = self._spec_round(spec, fed) if spec else []
            if fed and not spec:
                feed_forks([j.fork for j in fed], [[j.pending] for j in fed])
            for j in fed:
                j.ids.append(j.pending)
                j.pending = None
            ids = [[t] for t in self._sample(plain)] if plain else []
            ids += got
        except DegError as e:
            for j in live:
                self._finish(j, error=e)
            self._streams = []
            return
        self.stats["decode_steps"] += 1
        self.stats["decode_rows"] += len(live)
        still = []
        for j, got in zip(plain + spec, ids):
            if self._take(j, got):
                still.append(j)
        self._streams = still

    def _spec_round(self, rows, fed=()):
        """--spec-serve: one speculative round of the greedy streams rows
        (deg.spec.spec_step: drafts from the prompt, the reply and the prefix's
        draft reference, one ragged feed, exact argmax verification). Their
        pending id is the carry; the streams fed (not speculative) have their
        pending id fed in the same pass. Returns each speculative stream's 1..
        emitted ids (plain greedy decoding's, byte for byte)."""
        for j in rows:
            if j.spec is None:
                j.spec = SpecState(self.model, j.ids + [j.pending], ref=j.spec_ref,
                                   stop_ids=self._stop_list)
                self.stats["spec_streams"] += 1
        got = spec_step([j.fork for j in rows], [j.spec for j in rows],
                        [j.max_tokens - j.n_gen for j in rows],
                        plain=[(j.fork, [j.pending]) for j in fed])
        for j in rows:  # the carry is fed now
            j.ids.append(j.pending)
            j.pending = None
        return got

    def _take(self, j, got):
        """Stream j emitted the ids got (the fork holds every one before the
        last); True while it goes on. A stream finishing before the last id
        (a stop string) rewinds its fork to the ids it keeps."""
        for k, t in enumerate(got):
            if k:  # the previous id was fed by the speculative round
                j.ids.append(j.pending)
                j.pending = None
            j.n_gen += 1
            j.step += 1
            done = None
            if t in self._stop_ids:
                done = "stop"
            else:
                j.pending = t
                j.buf += self.model.detokenize_bytes([t])
                if self._emit_text(j):
                    done = "stop"
                elif j.n_gen >= j.max_tokens:
                    self._flush(j)
                    done = "length"
            if done is not None:
                if k + 1 < len(got):
                    j.fork.truncate(len(j.ids))
                self._finish(j, reason=done)
                return False
        return True

    def _sample(self, rows):
        """One id per row from its fork's logits (deg.generate_forks, max_tokens 1);
        step s of a stream draws from the stream seeded by (seed, s)."""
        gens = generate_forks([j.fork for j in rows], max_tokens=1,
                              temperature=[float(j.temperature) for j in rows],
                              top_p=[float(j.top_p) for j in rows],
                              seed=[(int(j.seed) * 0x9E3779B97F4A7C15 + j.step) & _MASK64
                                    for j in rows],
                              stop_ids=self._stop_list)
        return [g.ids[0] for g in gens]

    def _emit_text(self, j):
        """Emit the complete UTF-8 text of j.buf, holding back what could still
        become a stop string; True when a stop string was completed."""
        try:
            text = j.buf.decode("utf-8")
            rest = b""
        except UnicodeDecodeError as e:
            if e.reason != "unexpected end of data":
                text, rest = j.buf.decode("utf-8", "replace"), b""
            else:
                text, rest = j.buf[:e.start].decode("utf-8"), j.buf[e.start:]
        full = j.text + text
        for s in j.stops:
            k = full.find(s, max(0, len(j.text) - len(s) + 1))
            if k >= 0:
                delta = full[len(j.text):k]
                if delta:
                    j.emit(("delta", delta))
                j.text, j.buf = full[:k], b""
                return True
        hold = 0
        for s in j.stops:
            for m in range(min(len(s) - 1, len(full)), 0, -1):
                if full.endswith(s[:m]):
                    hold = max(hold, m)
                    break
        keep = max(len(j.text), len(full) - hold)
        delta = full[len(j.text):keep]
        if delta:
            j.emit(("delta", delta))
            j.text = full[:keep]
        j.buf = full[keep:].encode("utf-8") + rest
        return False

    def _flush(self, j):
        if j.buf:
            delta = j.buf.decode("utf-8", "replace")
            j.text += delta
            j.buf = b""
            j.emit(("delta", delta))

    def _finish(self, j, reason=None, error=None, cancelled=False):
        fork, j.fork = j.fork, None
        st, j.spec = j.spec, None
        if st is not None:
            if not st.closed:
                c = st.stats
                self.stats["spec_drafted"] += c.drafted
                self.stats["spec_accepted"] += c.accepted
                self.stats["spec_gate_offs"] += c.gate_offs
            st.close()
        if error is not None or cancelled or fork is None:
            if fork is not None:
                fork.close()
            if error is not None:
                j.emit(("error", error))
            return
        self._flush(j)
        key = (j.cache_target, tuple(j.ids))
        if self.chat_cache > 0 and key not in self._cache and len(key[1]) <= self.cache_tokens:
            self._cache[key] = fork
            self._cached_tokens += len(key[1])
            while len(self._cache) > self.chat_cache or self._cached_tokens > self.cache_tokens:
                k, f = self._cache.popitem(last=False)
                self._cached_tokens -= len(k[1])
                f.close()
        else:
            fork.close()
        j.emit(("done", {"finish_reason": reason, "completion_tokens": j.n_gen,
                         "prompt_tokens": j.prompt_tokens, "cached_tokens": j.cached_tokens}))
