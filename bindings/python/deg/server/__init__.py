"""deg serve / python -m deg.server: the HTTP server of the deg contract §9, §9.1.

One process holds ONE model: the backbone is loaded once (deg.Model); the fill
checkpoint runs over it (deg_ckpt_open with params.model) and each cartridge's
rows become a trunk of that same model, so a cartridge adds only its rows; a
fleet (--fleet) opens over the same model and composes the selected documents'
cartridges per conversation (server/fleet.py).
Routes: POST /v1/fill, /v1/decisions, /v1/systemone, /v1/chat/completions;
GET /v1/models, /health (server/app.py). Fills run on --fill-workers worker
threads (default 2, each its own checkpoint handle over the one model) with
batching, chats on their own thread (server/engine.py): one oversized fill
holds one worker, never the requests behind it. SIGTERM/SIGINT: uvicorn stops
accepting, lets running requests finish, then the workers drain and exit.

    deg serve [--ckpt DIR] [--model PATH] [--cartridge [NAME=]FILE ...]
              [--fleet [NAME=]DIR ... [--rag-docs K] [--rag-adaptive [--rag-margin M]]]
              [--spec-serve]
              [--host 127.0.0.1] [--port 8790] [--api-key KEY | $DEG_API_KEY]
              [--deadline-ms 60000] [--max-fields N] [--max-fork-tokens N]
              [--fill-workers 2] [--max-pending 256] ...
Work a request can cause is bounded by default: a body of at most
--max-body-bytes (4 MiB), and per fill a deadline (--deadline-ms, 60 s) and
libdeg's default caps on instantiated fields and fork tokens (--max-fields,
--max-fork-tokens); chat prompts + max_tokens fit the backbone's context. 0
lifts a limit; a request's own options can only tighten them; a limit error
names the flag. At most --fill-workers fill batches run at once; beyond them
requests queue, and more than --max-pending queued jobs get 429 + Retry-After.
"""
import argparse
import os
import sys

from ..errors import ArgumentError, DegError
from ..limits import add_limit_arguments
from ..limits import limits_from_args as _limits_from_args

__all__ = ["Server", "add_arguments", "limits_from_args", "main"]

DEFAULT_PORT = 8790
#: --rag-margin: the score lead (deg.fleets.doc_scores: best chunk's cosine + the
#: weighted BM25 share) a document outside a conversation's selection needs
#: before --rag-adaptive switches to it
DEFAULT_RAG_MARGIN = 0.05
API_KEY_ENV = "DEG_API_KEY"
#: --deadline-ms: the wall-clock budget of one fill (from the start of its batch):
#: a request body of --max-body-bytes (a context of ~10^6 tokens) must not buy
#: minutes of CPU. Fills past it fail alone with LimitError (HTTP 400 limit_error).
DEFAULT_DEADLINE_MS = 60000
#: --fill-workers: fill batches that run at once (issue 19: with one, an oversized
#: fill held every other client's request for its whole deadline). Each worker is
#: one checkpoint handle over the shared model (its heads: a few MB) and one
#: running fill's K/V; 2 = this machine class's cores. More workers share the
#: same cores: a normal fill next to a big one runs slower, never behind it.
DEFAULT_FILL_WORKERS = 2


class Server:
    """The loaded state of a server: model, checkpoint, cartridge trunks, engine and
    the ASGI app (self.app). close() stops the engine and frees everything.
    limits: the work limits of every fill (deg.fill's limits mapping); None =
    {"deadline_ms": DEFAULT_DEADLINE_MS} + libdeg's default caps. fill_workers:
    fill batches that run at once (one checkpoint handle each)."""

    def __init__(self, ckpt=None, model_path=None, cartridges=(), batch_window_ms=5.0,
                 max_batch=16, max_pending=256, api_key=None, null_margin=None, threads=None,
                 max_body=4 << 20, chat_cache=16, fleets=(), rag_docs=1, rag_adaptive=False,
                 rag_margin=DEFAULT_RAG_MARGIN, limits=None,
                 fill_workers=DEFAULT_FILL_WORKERS, spec_serve=False):
        from ..fill import ckpt_backbone_path, default_checkpoint_path, load
        from ..api import ModelNames
        from ..cartridge import Cartridge
        from ..model import load_model
        from ..runtime import set_num_threads
        from .app import build_app
        from .engine import Engine
        from .fleet import FleetTarget
        from ..fleet import Fleet
        from ..spec import composed_reference
        if threads:
            set_num_threads(int(threads))
        if int(fill_workers) < 1:
            raise ArgumentError(f"fill_workers must be >= 1, got {fill_workers}")
        ckpt_dir = ckpt or default_checkpoint_path()
        self._trunks = {}
        self._fleets = {}
        self._refs = {}  # --spec-serve: cartridge target -> its draft reference
        self.model = load_model(model_path or ckpt_backbone_path(ckpt_dir))
        try:  # a failure frees what was loaded (closing the model closes its children)
            self.ckpt = load(ckpt_dir, model=self.model, null_margin=null_margin)
            self._fill_ckpts = [self.ckpt] + [
                load(ckpt_dir, model=self.model, null_margin=null_margin)
                for _ in range(int(fill_workers) - 1)]
            self.names = ModelNames(ckpt_dir)
            trunks = self._trunks
            trunks[""] = self.model.trunk()
            targets = {n: "" for n in self.names.aliases}
            stem = os.path.basename(self.model.path.rstrip("/")).split(".")[0]
            targets.setdefault(stem, "")
            self.cartridge_rows = {}
            for spec in cartridges:
                name, path = _named_spec(spec, "--cartridge")
                if name in targets:
                    raise ArgumentError(f"--cartridge {spec}: model name {name!r} is already "
                                        "served")
                with Cartridge.load(self.model, path) as c:  # only its trunk (rows) stays
                    trunks[name] = c.trunk()
                    self.cartridge_rows[name] = len(c)
                    if spec_serve:  # and its draft reference, a copy of its own
                        ref = composed_reference([c])
                        if ref is not None:
                            self._refs[name] = ref
                targets[name] = name
            for spec in fleets:
                name, path = _named_spec(spec, "--fleet")
                if name in targets:
                    raise ArgumentError(f"--fleet {spec}: model name {name!r} is already "
                                        "served")
                if int(rag_docs) < 1:
                    raise ArgumentError(f"--rag-docs must be >= 1, got {rag_docs}")
                fl = Fleet.open(self.model, path, budget=1)  # serving maps absent parts
                try:
                    self._fleets[name] = FleetTarget(fl, rag_docs, rag_adaptive, rag_margin)
                except BaseException:
                    fl.close()
                    raise
                targets[name] = name
            _trim_heap()  # give back the cartridges' freed load buffers (grads, moments)
            self.engine = Engine(self._fill_ckpts, self.model, trunks,
                                 batch_window=float(batch_window_ms) / 1000.0,
                                 max_batch=int(max_batch), max_pending=int(max_pending),
                                 chat_cache=int(chat_cache), fleets=self._fleets,
                                 limits=(dict(deadline_ms=DEFAULT_DEADLINE_MS)
                                         if limits is None else limits),
                                 spec_serve=spec_serve, draft_refs=self._refs)
            self.app = build_app(self.engine, self.names, targets, api_key=api_key,
                                 max_body=int(max_body), on_shutdown=self.close)
        except BaseException:
            self.close()
            raise

    def close(self):
        eng, self.engine = getattr(self, "engine", None), None
        if eng is not None:
            eng.stop()
        for t in getattr(self, "_trunks", {}).values():
            t.close()
        for r in getattr(self, "_refs", {}).values():
            r.close()
        for f in getattr(self, "_fleets", {}).values():
            f.close()
        for ck in getattr(self, "_fill_ckpts", [getattr(self, "ckpt", None)]):
            if ck is not None:
                ck.close()
        if getattr(self, "model", None) is not None:
            self.model.close()


def _trim_heap():
    """glibc keeps freed heap pages resident; return them (no-op elsewhere)."""
    try:
        import ctypes
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):
        pass


def _named_spec(spec, flag):
    """NAME=PATH, or PATH (name = the file or directory name without
    .cartridge.safetensors / .safetensors)."""
    if "=" in spec and not os.path.exists(spec):
        name, path = spec.split("=", 1)
    else:
        path = spec
        name = os.path.basename(path.rstrip("/"))
        for suf in (".cartridge.safetensors", ".safetensors"):
            if name.endswith(suf):
                name = name[:-len(suf)]
                break
    if not name:
        raise ArgumentError(f"{flag} {spec!r}: empty model name")
    return name, path


def add_arguments(p):
    p.add_argument("--ckpt", help="checkpoint directory (default: the shipped checkpoint or "
                   "$DEG_CHECKPOINT)")
    p.add_argument("--model", help="backbone file/directory (default: the checkpoint's)")
    p.add_argument("--cartridge", action="append", default=[], metavar="[NAME=]FILE",
                   help="serve chat behind this cartridge under model name NAME (default: "
                   "the file name); repeatable")
    p.add_argument("--host", default="127.0.0.1", help="bind address (default loopback)")
    p.add_argument("--port", type=int, default=DEFAULT_PORT, help="port (default 8790)")
    p.add_argument("--batch-window-ms", type=float, default=5.0,
                   help="fills arriving within this window run as one batch (default 5)")
    p.add_argument("--max-batch", type=int, default=16,
                   help="fills per batch and concurrent chat streams (default 16)")
    p.add_argument("--max-pending", type=int, default=256,
                   help="queued jobs beyond this get 429 + Retry-After (default 256)")
    p.add_argument("--fill-workers", type=int, default=DEFAULT_FILL_WORKERS,
                   help="fill batches that run at once, one checkpoint handle each: an "
                   "oversized fill holds one worker, not the requests behind it (default "
                   f"{DEFAULT_FILL_WORKERS})")
    p.add_argument("--api-key", default=None, help=f"require Authorization: Bearer KEY "
                   f"(default: ${API_KEY_ENV} if set)")
    p.add_argument("--null-margin", type=float, default=None,
                   help="options.null_margin of requests that leave it null (§9; default: the "
                        "checkpoint's deg.json null_margin, else 0)")
    p.add_argument("--threads", type=int, default=None, help="compute threads")
    p.add_argument("--max-body-bytes", type=int, default=4 << 20,
                   help="request body limit, 413 beyond (default 4 MiB)")
    p.add_argument("--chat-cache", type=int, default=16,
                   help="finished conversations whose K/V is kept for follow-ups (default 16)")
    p.add_argument("--fleet", action="append", default=[], metavar="[NAME=]DIR",
                   help="serve chat behind a cartridge fleet (deg fleet init/train/index) "
                   "under model name NAME (default: the directory name): each new "
                   "conversation runs behind the composed cartridges of the documents "
                   "retrieval picks; repeatable")
    p.add_argument("--rag-docs", type=int, default=1,
                   help="documents composed per conversation under --fleet (default 1)")
    p.add_argument("--rag-adaptive", action="store_true",
                   help="--fleet: a follow-up switches documents when one outside the "
                   "selection beats every selected one by --rag-margin (all user messages "
                   "as the query)")
    p.add_argument("--rag-margin", type=float, default=DEFAULT_RAG_MARGIN,
                   help=f"--rag-adaptive's decisive margin, in retrieval score (default "
                   f"{DEFAULT_RAG_MARGIN})")
    p.add_argument("--spec-serve", action="store_true",
                   help="greedy chats (temperature 0) decode speculatively, drafting from "
                   "their prompt and reply and from the prefix's draft reference (a "
                   "--cartridge trained with --draft-ref; a --fleet's selected documents, "
                   "deg fleet init --draft-ref): the same text as plain greedy decoding, "
                   "with the lean acceptance gate")
    add_limit_arguments(p, "one fill", DEFAULT_DEADLINE_MS, " (from the start of its batch)")
    p.add_argument("--log-level", default="info")


def limits_from_args(args):
    """The fills' work limits from --deadline-ms, --max-fields, --max-fork-tokens
    (absent caps: libdeg's defaults); SystemExit for a negative value."""
    return _limits_from_args(args, "deg serve")


def run(args):
    import uvicorn
    for name, lo in (("--max-batch", 1), ("--max-pending", 1), ("--max-body-bytes", 1024),
                     ("--chat-cache", 0), ("--fill-workers", 1)):
        if getattr(args, name[2:].replace("-", "_")) < lo:
            raise SystemExit(f"deg serve: {name} must be >= {lo}")
    if args.rag_docs < 1:
        raise SystemExit("deg serve: --rag-docs must be >= 1")
    if not args.rag_margin >= 0:
        raise SystemExit("deg serve: --rag-margin must be >= 0")
    if args.batch_window_ms < 0:
        raise SystemExit("deg serve: --batch-window-ms must be >= 0")
    limits = limits_from_args(args)
    key = args.api_key if args.api_key is not None else os.environ.get(API_KEY_ENV) or None
    try:
        srv = Server(args.ckpt, args.model, args.cartridge, args.batch_window_ms,
                     args.max_batch, args.max_pending, key, args.null_margin, args.threads,
                     args.max_body_bytes, args.chat_cache, args.fleet, args.rag_docs,
                     args.rag_adaptive, args.rag_margin, limits, args.fill_workers,
                     args.spec_serve)
    except DegError as e:
        raise SystemExit(f"deg serve: error: {e}") from None
    print(f"deg serve: {srv.names.id} on http://{args.host}:{args.port} "
          f"(chat: {', '.join(sorted(srv.app.state.ctx.chat_targets))})", file=sys.stderr,
          flush=True)
    try:
        uvicorn.run(srv.app, host=args.host, port=args.port, log_level=args.log_level,
                    timeout_graceful_shutdown=None)
    finally:
        srv.close()
    return 0


def main(argv=None):
    p = argparse.ArgumentParser(prog="python -m deg.server", description=__doc__.split("\n")[0])
    add_arguments(p)
    return run(p.parse_args(argv))
