"""Resumable self-study runs: snapshots of a deg.selfstudy.train() run in a directory.

A run given `state=DIR` (`deg cartridge train --state DIR`) writes, after
every save_every optimizer steps and at the end:

  conversations.jsonl          the synthesised conversations in synthesis
                               order, append-only; lines past the count in
                               state.json belong to an unfinished step and
                               are dropped on resume
  cartridge.0.safetensors      rows + Adam moments + step count, two
  cartridge.1.safetensors      alternating slots: a kill while one is being
                               written leaves the other, which state.json
                               names, intact
  state.json                   written last, atomically: the step, the slot,
                               the conversation counts, the synthesis and
                               replay RNG states, the replay order, the
                               losses, held-out history and CPU/wall seconds

Started again with the same DIR and settings, train() continues after the
last snapshot, and the run ends bitwise equal to an uninterrupted one (the
conversations are replayed from the file, never re-synthesised; Adam's
moments and step count come back with the rows; tests/python/
test_selfstudy.py::test_resume_is_bitwise_the_uninterrupted_run). A DIR
holding a run with other settings is refused (ArgumentError naming them).
`epochs` is not a setting of the run: the first N passes of a longer run
are the N-pass run (constant lr, replay order drawn pass by pass), so a
finished run can be continued for more passes.
"""
import json
import os
from collections import namedtuple
from os import fspath
from pathlib import Path

from .atomic import atomic_write
from .cartridge import Cartridge
from .errors import ArgumentError, FormatError

STATE_VERSION = 2  # 2: libdeg's run (xoshiro256** stream states, deg_selfstudy_run_state)

#: What load() gives back: the cartridge of the last snapshot, every
#: synthesised conversation (the first n_seen were trained on), and the
#: state.json fields.
Resumed = namedtuple("Resumed", "cartridge conversations n_seen state")


class RunState:
    """The snapshot directory of one train() run. settings: a JSON-able dict
    of everything the run's numbers depend on (compared on resume)."""

    def __init__(self, path, settings, to_json, from_json):
        self.dir = Path(path)
        self.settings = json.loads(json.dumps(settings))  # as it reads back
        self.to_json, self.from_json = to_json, from_json
        self.n_written = 0  # conversations in conversations.jsonl
        self.slot = 1       # the first snapshot goes to slot 0
        if self.dir.exists() and not self.dir.is_dir():
            raise ArgumentError(f"state {fspath(path)!r} is not a directory")

    def _where(self):
        return f"state {fspath(self.dir)!r}"

    def load(self, model):
        """The last snapshot (a Resumed), or None when DIR holds none yet.
        Errors: ArgumentError (a run with other settings), FormatError (a
        damaged snapshot: unreadable state.json, missing conversations, a
        cartridge whose step count is not the state's)."""
        f = self.dir / "state.json"
        if not f.exists():  # conversations of a run killed before its first snapshot
            (self.dir / "conversations.jsonl").unlink(missing_ok=True)
            return None
        try:
            st = json.loads(f.read_text())
            version = st["version"]
        except (OSError, ValueError, KeyError, TypeError) as e:
            raise FormatError(f"{self._where()}: state.json is unreadable ({e})") from None
        if version != STATE_VERSION:
            raise FormatError(f"{self._where()}: state version {version}, this deg writes "
                              f"{STATE_VERSION}")
        old = st.get("settings", {})
        diff = sorted(k for k in set(old) | set(self.settings)
                      if old.get(k) != self.settings.get(k))
        if diff:
            what = "; ".join(f"{k}: {old.get(k)!r} there, {self.settings.get(k)!r} here"
                             for k in diff if k not in ("corpus", "model"))
            what += "".join(f"; another {k}" for k in diff if k in ("corpus", "model"))
            raise ArgumentError(f"{self._where()} holds a run with other settings "
                                f"({what.lstrip('; ')}): give a new directory")
        cart = Cartridge.load(model, self.dir / f"cartridge.{st['slot']}.safetensors")
        if cart.steps != st["step"]:
            cart.close()
            raise FormatError(f"{self._where()}: cartridge.{st['slot']} has {cart.steps} Adam "
                              f"steps, state.json says {st['step']}")
        convs = self._read_conversations(st["n_synth"])
        self.n_written, self.slot = len(convs), st["slot"]
        return Resumed(cart, convs, st["n_seen"], st)

    def _read_conversations(self, n):
        """The first n lines of conversations.jsonl; the file is cut after
        them (the rest is from a step that did not finish)."""
        path = self.dir / "conversations.jsonl"
        convs = []
        try:
            with open(path, "r+b") as fh:
                while len(convs) < n:
                    line = fh.readline()
                    if not line.endswith(b"\n"):
                        break
                    convs.append(self.from_json(json.loads(line)))
                fh.truncate(fh.tell())
        except (OSError, ValueError, KeyError, TypeError) as e:
            raise FormatError(f"{self._where()}: conversations.jsonl is unreadable "
                              f"({e})") from None
        if len(convs) != n:
            raise FormatError(f"{self._where()}: conversations.jsonl holds {len(convs)} "
                              f"conversations, state.json says {n}")
        return convs

    def save(self, cartridge, synthesised, n_seen, **fields):
        """Snapshot after an optimizer step: new conversations appended, the
        cartridge into the free slot, then state.json (step = the
        cartridge's step count; fields: the rest of the run's state)."""
        self.dir.mkdir(parents=True, exist_ok=True)
        if len(synthesised) > self.n_written:
            with open(self.dir / "conversations.jsonl", "a") as fh:
                for c in synthesised[self.n_written:]:
                    fh.write(json.dumps(self.to_json(c)) + "\n")
                fh.flush()
                os.fsync(fh.fileno())
            self.n_written = len(synthesised)
        slot = 1 - self.slot
        cartridge.save(self.dir / f"cartridge.{slot}.safetensors")
        state = dict(version=STATE_VERSION, settings=self.settings, step=cartridge.steps,
                     slot=slot, n_synth=len(synthesised), n_seen=n_seen, **fields)
        atomic_write(self.dir / "state.json", lambda fh: fh.write(json.dumps(state).encode()))
        self.slot = slot
