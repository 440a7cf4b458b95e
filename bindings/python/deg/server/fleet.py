"""Fleet serving for deg serve (--fleet): which documents' cartridges a chat runs behind.

Spec: doc/spec/cartridges.md, "HTTP serving (lmserve --fleet)".
- Retrieval runs once per NEW conversation: the user messages (joined by newlines)
  score through the index (deg.fleets: the serving model's embedding + BM25) and pick
  the k best documents (--rag-docs); their cartridges compose, in that order, as
  the conversation's prefix (deg.Fleet.trunk).
- Conversation-sticky: a conversation's identity is its FIRST user message; a
  request whose first user message was seen keeps the selection its conversation
  started with (no retrieval), so its follow-ups continue the same composed prefix
  and the engine's conversation cache reuses their K/V (cached_tokens).
- --rag-adaptive: a follow-up switches only when a document outside the current
  selection beats EVERY current document's best chunk by more than --rag-margin
  under the contextual query (all user messages); it then takes the top k under
  that query, and the conversation restarts on the new composed prefix.
All of it runs on the engine's worker thread (it uses the model).
"""
import collections

from .. import fleets as _fleets

__all__ = ["FleetTarget"]


def _user_texts(messages):
    return [m["content"] for m in messages if m["role"] == "user"]


class FleetTarget:
    """One served fleet. fleet: an open deg.Fleet over the server's model; k:
    documents per selection; adaptive, margin: the decisive-margin rule;
    max_conversations: identities remembered (LRU); max_trunks: composed prefixes
    kept while no fork uses them (LRU; one in use is never freed)."""

    def __init__(self, fleet, k=1, adaptive=False, margin=0.05, max_conversations=1024,
                 max_trunks=8):
        self.fleet, self.k = fleet, min(int(k), len(fleet))
        self.adaptive, self.margin = bool(adaptive), float(margin)
        self.index = _fleets.load_index(fleet)
        self.names = [d.name for d in fleet.docs()]
        self.max_conversations, self.max_trunks = max_conversations, max_trunks
        self._convs = collections.OrderedDict()   # first user message -> selection
        self._trunks = collections.OrderedDict()  # selection -> deg.Trunk
        self._refs = {}  # selection -> its draft reference (--spec-serve; None: none)
        self.stats = {"retrievals": 0, "sticky": 0, "switches": 0}

    def _retrieve(self, query):
        self.stats["retrievals"] += 1
        return tuple(d for d, _ in _fleets.select(self.fleet, query, self.k, self.index))

    def select(self, messages):
        """(selection: tuple of document indices, how: "retrieved" | "sticky" |
        "switched") for a chat's messages."""
        users = _user_texts(messages)
        ident = users[0] if users else ""
        sel = self._convs.get(ident)
        if sel is None:
            sel, how = self._retrieve("\n".join(users)), "retrieved"
        elif self.adaptive and len(users) > 1:
            scores = _fleets.doc_scores(self.fleet, "\n".join(users), self.index)
            outside = max((scores[d] for d in range(len(scores)) if d not in sel),
                          default=float("-inf"))
            if outside > max(scores[d] for d in sel) + self.margin:
                sel, how = self._retrieve("\n".join(users)), "switched"
                self.stats["switches"] += 1
            else:
                how = "sticky"
        else:
            how = "sticky"
        if how == "sticky":
            self.stats["sticky"] += 1
        self._convs[ident] = sel
        self._convs.move_to_end(ident)
        while len(self._convs) > self.max_conversations:
            self._convs.popitem(last=False)
        return sel, how

    def trunk(self, sel):
        """The composed prefix of selection sel (built once, kept while in use)."""
        t = self._trunks.get(sel)
        if t is None:
            t = self._trunks[sel] = self.fleet.trunk(list(sel))
        self._trunks.move_to_end(sel)
        for key in list(self._trunks)[:-1]:
            if len(self._trunks) <= self.max_trunks:
                break
            if not any(not f.closed for f in list(self._trunks[key]._children)):
                self._trunks.pop(key).close()
                r = self._refs.pop(key, None)
                if r is not None:  # no stream of the selection runs: none uses it
                    r.close()
        return t

    def draft_ref(self, sel):
        """--spec-serve: the draft reference of selection sel (the selected
        documents' stored references composed in the library, deg.Fleet.draft_ref;
        None when they have none), built once and kept with the selection's
        prefix (call trunk(sel) first)."""
        if sel not in self._refs:
            self._refs[sel] = self.fleet.draft_ref(list(sel))
        return self._refs[sel]

    def doc_names(self, sel):
        return [self.names[d] for d in sel]

    def close(self):
        for t in self._trunks.values():
            t.close()
        self._trunks.clear()
        for r in self._refs.values():
            if r is not None:
                r.close()
        self._refs.clear()
        self.fleet.close()
