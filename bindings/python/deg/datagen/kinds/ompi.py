"""Open MPI's help message files (datagen v5, kind `ompihelp`): the start of a
/usr/share/openmpi/help-*.txt file (its `#` comment header with copyright lines,
then `[topic]` sections of message text with printf placeholders), cut after the
1st..3rd section (at most 2000 characters), as its own text or rendered.

Facts: the earliest / latest year over all copyright lines (int) and the first
line's holder (kinds.source.copyright_facts; not when the line wraps it), what the file is the help for (the header's
"help file for ..." phrase; null when it has none), the topics in the excerpt
(list), the first topic, whether the messages have printf placeholders (bool),
whether the header has more than one copyright line (bool).
"""
import os
import random
import re

from ..facts import Fact
from . import Entity, FileKind, text_of, walk_unique
from .meta import _list_fact
from .source import copyright_facts

_TOPIC = re.compile(r"^\[([^\]\n]+)\][ \t]*$", re.M)


class _OmpiHelp(FileKind):
    NAME, SOURCE = "ompihelp", "/usr/share/openmpi/help-*.txt (header + first sections)"

    def find(self, root="/usr/share/openmpi"):
        return [p for p in walk_unique([root], (".txt",), max_depth=1, max_bytes=256 << 10)
                if os.path.basename(p).startswith("help-")]

    def entity(self, path):
        text = text_of(path, 64 << 10, content=True)
        if not text:
            return None
        topics = list(_TOPIC.finditer(text))
        if not topics or topics[0].start() > 1500:
            return None
        k = random.Random(f"ompihelp:{os.path.basename(path)}").randint(1, 3)
        end = topics[k].start() if len(topics) > k else len(text)
        while end > 2000 and k > 1:
            k -= 1
            end = topics[k].start()
        if end > 2000:
            return None
        raw = text[:end].rstrip() + "\n"
        head = topics[0].start()
        # a holder the line wraps (no "reserved" after it on its line) would be cut: not asked
        facts = [f for f in copyright_facts(raw, 0, head, every=True) if f.key != "holder" or
                 "reserved" in raw[f.pos[1]:raw.find("\n", f.pos[1])]]
        m = re.search(r"help file for ([^\n]*?[^\s.])\.?[ \t]*$", raw[:head], re.M)
        facts.append(Fact("about", "span", m.group(1) if m else None,
                          pos=(m.start(1), m.end(1)) if m else None,
                          names=[["help", "for"], ["about"], ["component"]],
                          desc=["what the file is the help for, as its header says"],
                          label={"en": "Help for"}))
        tp = [(t.group(1), (t.start(1), t.end(1))) for t in topics[:k]]
        f = _list_fact("topics", tp, [["topics"], ["sections"], ["messages"]],
                       "the [topic] names, in order", label={"en": "Topics"})
        if f is None:
            return None
        facts.append(f)
        facts.append(Fact("first_topic", "span", tp[0][0], pos=tp[0][1],
                          names=[["first", "topic"], ["first", "section"]],
                          desc=["the first [topic]'s name"], label={"en": "First topic"}))
        facts.append(Fact("placeholders", "bool", re.search(r"%[-0-9.]*[sdluxf]", raw[head:]) is not None,
                          names=[["has", "placeholders"], ["parameterised"]],
                          neg=([["fixed", "text"], ["no", "placeholders"]],
                               ["true if the messages have no printf placeholders"]),
                          desc=["do the messages contain printf placeholders (%s, %d)?"]))
        facts.append(Fact("several_holders", "bool", len(re.findall(r"Copyright", raw[:head])) > 1,
                          names=[["several", "copyright", "lines"], ["multiple", "holders"]],
                          neg=([["single", "copyright", "line"], ["one", "holder"]],
                               ["true if at most one copyright line is written"]),
                          desc=["does the header have more than one copyright line?"]))
        stem = os.path.basename(path)[:-4]
        return Entity(stem, stem, facts, raw=raw)


OMPIHELP = _OmpiHelp()
