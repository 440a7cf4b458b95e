"""Scripts (datagen v4): the headers of interpreted programs in /usr/bin and
/usr/sbin (kind `script`) and bash completion files (kind `completion`), each
as its own text or rendered.

script: the file's first lines (at most 40 lines / 1800 characters, whole
lines) under a `==> PATH <==` line as `head` prints it: the program name, the
interpreter (enum, from the `#!` line; through `env` when it is used), the
interpreter path, whether it runs through env (bool), a shell script's
`set -e` (bool), the first copyright line's years and holder
(kinds.source.copyright_facts), the licence a notice names (enum), the first
e-mail address and URL, the long options (`--name`) the header mentions (list).
completion (/usr/share/bash-completion/completions/*, files of at most 3000
characters, whole): the commands it completes (list, from `complete` lines),
the completion function the first `complete -F` names, the shell functions it
defines (list), the long options it offers (list), whether it uses
bash-completion's `_init_completion` (bool).
"""
import os
import re

from ..facts import Fact
from . import Entity, FileKind, text_of, walk_unique
from .docs import _EMAIL, _URL
from .meta import _list_fact
from .source import _licence_facts, copyright_facts

INTERPRETERS = ("sh", "bash", "dash", "zsh", "ksh", "perl", "python3", "python", "ruby", "node",
                "tclsh", "wish", "awk", "gawk", "make", "lua", "php")
_SHEBANG = re.compile(r"#![ \t]*(\S+)(?:[ \t]+(\S+))?")
_LONGOPT = re.compile(r"(?<![\w-])--[a-z][a-z0-9]*(?:-[a-z0-9]+)*(?![\w-])")


def long_options(text, a=0, b=None, most=8):
    """[(option, (s, e))] of the first `most` distinct `--long-options` in text[a:b]."""
    out = []
    for m in _LONGOPT.finditer(text, a, len(text) if b is None else b):
        if m.group(0) not in [x for x, _ in out]:
            out.append((m.group(0), (m.start(), m.end())))
            if len(out) >= most:
                break
    return out


def _found(rx, text, key, kind, names, desc, a=0):
    m = rx.search(text, a)
    return [Fact(key, kind, m.group(0), pos=(m.start(), m.end()), names=names, desc=[desc])] if m else []


class _Script(FileKind):
    NAME, SOURCE = "script", "/usr/bin, /usr/sbin scripts (#! headers)"
    ROOTS = ("/usr/bin", "/usr/sbin")

    def find(self, root=None):
        return walk_unique([root] if isinstance(root, str) else (root or self.ROOTS), ("",),
                           max_depth=0, max_bytes=512 << 10)

    def entity(self, path):
        text = text_of(path, 4096)
        if not text or not text.startswith("#!"):
            return None
        lines, n = [], 0
        for ln in text.split("\n")[:40]:
            if n + len(ln) + 1 > 1800:
                break
            lines.append(ln)
            n += len(ln) + 1
        base = os.path.basename(path)
        head = f"==> {path} <==\n"
        raw = head + "\n".join(lines).rstrip() + "\n"
        a = len(head)
        m = _SHEBANG.match(raw, a)
        if not m:
            return None
        prog_at = 2 if os.path.basename(m.group(1)) == "env" and m.group(2) else 1
        prog = os.path.basename(m.group(prog_at))
        i = head.index(base)
        facts = [Fact("name", "span", base, pos=(i, i + len(base)),
                      names=[["program"], ["command", "name"], ["script", "name"]],
                      desc=["the script's file name"], label={"en": "Program"}),
                 Fact("shebang", "span", m.group(1), pos=(m.start(1), m.end(1)),
                      names=[["interpreter", "path"], ["shebang"]],
                      desc=["the path on the #! line"], label={"en": "Interpreter path"}),
                 Fact("env", "bool", prog_at == 2, names=[["uses", "env"], ["via", "env"]],
                      neg=([["direct", "interpreter"], ["no", "env"]],
                           ["true if the #! line names the interpreter directly"]),
                      desc=["does the #! line go through /usr/bin/env?"])]
        if prog in INTERPRETERS:
            s = m.start(prog_at) + m.group(prog_at).rindex(prog)
            facts.append(Fact("interpreter", "enum", prog, surface=prog, options=list(INTERPRETERS),
                              pos=(s, s + len(prog)), names=[["interpreter"], ["language"]],
                              desc=["the program that runs the script"], label={"en": "Interpreter"}))
        if prog in ("sh", "bash", "dash", "zsh", "ksh"):
            strict = re.search(r"^[ \t]*set[ \t]+-[a-z]*e", raw, re.M) is not None
            facts.append(Fact("strict", "bool", strict, names=[["exits", "on", "error"], ["set", "e"]],
                              neg=([["continues", "on", "error"]],
                                   ["true if the header does not `set -e`"]),
                              desc=["does the script stop at the first failing command (set -e)?"]))
        facts += copyright_facts(raw, a) + _licence_facts(raw[a:])
        facts += _found(_EMAIL, raw, "email", "email", [["email"], ["contact"], ["author", "email"]],
                        "the first e-mail address in the header", a)
        facts += _found(_URL, raw, "url", "uri", [["url"], ["website"], ["link"]],
                        "the first URL in the header", a)
        f = _list_fact("options", long_options(raw, a), [["options"], ["long", "options"], ["flags"]],
                       "the --long options the header mentions, in order", label={"en": "Options"})
        if f:
            facts.append(f)
        return Entity(base, base, facts, raw=raw)


class _Completion(FileKind):
    NAME, SOURCE = "completion", "/usr/share/bash-completion/completions/* (files <= 3000 characters)"

    def find(self, root="/usr/share/bash-completion/completions"):
        return walk_unique([root], ("",), max_depth=0, max_bytes=3000)

    def entity(self, path):
        raw = text_of(path, 3000, 3000)
        if not raw or "complete" not in raw:
            return None
        cmds, fn = [], None
        for m in re.finditer(r"^[ \t]*complete[ \t]+([^\n;&|]*)$", raw, re.M):
            toks = list(re.finditer(r"\S+", m.group(1)))
            k = 0
            while k < len(toks):
                t = toks[k].group(0)
                if t.startswith("-"):
                    if t in ("-F", "-o", "-A", "-C", "-G", "-W", "-X", "-P", "-S") and k + 1 < len(toks):
                        if t == "-F" and fn is None:
                            fn = (toks[k + 1].group(0), (m.start(1) + toks[k + 1].start(),
                                                          m.start(1) + toks[k + 1].end()))
                        k += 1
                elif re.fullmatch(r"[\w][\w.+-]*", t) and t not in [c for c, _ in cmds]:
                    cmds.append((t, (m.start(1) + toks[k].start(), m.start(1) + toks[k].end())))
                k += 1
        if not cmds:
            return None
        base = os.path.basename(path)
        facts = [_list_fact("commands", cmds, [["commands"], ["completes"], ["programs"]],
                            "the commands this file completes", label={"en": "Commands"})]
        if fn and re.fullmatch(r"[\w-]+", fn[0]):
            facts.append(Fact("function", "span", fn[0], pos=fn[1],
                              names=[["completion", "function"], ["handler"]],
                              desc=["the function complete -F calls"], label={"en": "Function"}))
        defs = [(m.group(1), (m.start(1), m.end(1)))
                for m in re.finditer(r"^(?:function[ \t]+)?([A-Za-z_][\w-]*)[ \t]*\(\)", raw, re.M)]
        for key, items, names, desc in (
                ("functions", defs, [["functions"], ["defined", "functions"]],
                 "the shell functions it defines, in order"),
                ("options", long_options(raw), [["options"], ["long", "options"], ["flags"]],
                 "the --long options it offers, in order")):
            f = _list_fact(key, items, names, desc, label={"en": key.capitalize()})
            if f:
                facts.append(f)
        facts.append(Fact("init", "bool", "_init_completion" in raw,
                          names=[["uses", "init", "completion"], ["bash", "completion", "helpers"]],
                          neg=([["standalone"], ["no", "init", "completion"]],
                               ["true if it does not call _init_completion"]),
                          desc=["does it use bash-completion's _init_completion?"]))
        return Entity(base, f"bash completion for {base}", facts, raw=raw)


SCRIPT, COMPLETION = _Script(), _Completion()
