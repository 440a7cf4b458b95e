"""Python standard library functions (the running interpreter's own *.py
sources, read with `ast`, never imported): one public top-level function with
a docstring per document, as its source text (`def` line + docstring, the body
cut) or rendered programmatically.

Facts (gold from the syntax tree): function name, module name, the
docstring's first line, parameter names (array of strings, in order), the
parameters with their written defaults (array of objects), whether it takes
*args/**kwargs (bool), and the docstring line again as an x-generate gold.
"""
import ast
import glob
import os
import sysconfig

from ...parsers import trim_span
from ..facts import Fact
from ..guard import is_reserved, read_text
from . import Entity, Writer

NAME = "pydoc"
SOURCE = "the interpreter's stdlib *.py sources (sysconfig 'stdlib')"


def find(root=None):
    root = root or sysconfig.get_paths()["stdlib"]
    skip = {"test", "tests", "idlelib", "lib2to3", "site-packages", "dist-packages"}
    return sorted(p for p in glob.glob(os.path.join(root, "*.py")) + glob.glob(os.path.join(root, "*", "*.py"))
                  if not is_reserved(p) and not skip & set(os.path.relpath(p, root).split(os.sep)))


def _functions(path):
    try:
        src = read_text(path, limit=2 << 20)
        tree = ast.parse(src)
    except (OSError, SyntaxError, ValueError):
        return []
    out = []
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and not node.name.startswith("_"):
            doc = ast.get_docstring(node, clean=True)
            if doc and 10 <= len(doc.split("\n")[0]) <= 150:
                out.append((node, doc))
    return out


def entity(path, node, doc):
    parts, d = [os.path.basename(path)[:-3]], os.path.dirname(path)
    while os.path.isfile(os.path.join(d, "__init__.py")):  # inside a package
        parts.insert(0, os.path.basename(d))
        d = os.path.dirname(d)
    mod = ".".join(p for p in parts if p != "__init__")
    a = node.args
    params = [x.arg for x in a.posonlyargs + a.args + a.kwonlyargs]
    defaults = {}
    pos_args = a.posonlyargs + a.args
    for x, dv in zip(pos_args[len(pos_args) - len(a.defaults):], a.defaults):
        defaults[x.arg] = ast.unparse(dv)
    for x, dv in zip(a.kwonlyargs, a.kw_defaults):
        if dv is not None:
            defaults[x.arg] = ast.unparse(dv)
    if not params or len(params) > 10 or any(len(v) > 40 for v in defaults.values()):
        return None
    summary = doc.split("\n")[0].strip()
    summary = summary[slice(*trim_span(summary, 0, len(summary)))].rstrip(".")
    if not summary:
        return None
    # the raw layout: a def line written from the tree, then the docstring
    w = Writer()
    w.text(f"# module {mod}\n")
    mpos = (len("# module "), len("# module ") + len(mod))
    w.text("def ")
    npos = w.put(node.name)
    w.text("(")
    ppos, items, regions = [], [], []
    names = params + ([f"*{a.vararg.arg}"] if a.vararg else []) + ([f"**{a.kwarg.arg}"] if a.kwarg else [])
    for i, nm in enumerate(names):
        w.text(", " if i else "")
        if i == len(a.posonlyargs) + len(a.args) and a.kwonlyargs and not a.vararg:
            w.text("*, ")
        start = w._n
        if nm.startswith("*"):
            w.text(nm)
            continue
        ppos.append(w.put(nm))
        it = {"name": Fact("name", "span", nm, pos=ppos[-1])}
        if nm in defaults:
            w.text("=")
            it["default"] = Fact("default", "span", defaults[nm], pos=w.put(defaults[nm]))
        items.append(it)
        regions.append((start, w._n))
    w.text("):\n    \"\"\"")
    body = doc.split("\n")
    spos = w.put(summary)
    w.text(body[0].strip()[len(summary):])
    rest = "\n".join("    " + ln if ln else "" for ln in body[1:14])
    w.text(("\n" + rest if rest else "") + "\n    \"\"\"\n    ...\n")
    facts = [
        Fact("function", "span", node.name, pos=npos, names=[["function"], ["name"], ["function", "name"]],
             label={"en": "Function", "de": "Funktion", "fr": "Fonction", "es": "Función"},
             desc=["the function's name"]),
        Fact("module", "span", mod, pos=mpos, names=[["module"], ["module", "name"], ["package"]],
             label={"en": "Module", "de": "Modul", "fr": "Module", "es": "Módulo"},
             desc=["the module that defines it"]),
        Fact("summary", "span", summary, pos=spos, names=[["summary"], ["docstring", "summary"], ["purpose"]],
             label={"en": "Summary", "de": "Zusammenfassung", "fr": "Résumé", "es": "Resumen"},
             desc=["the first line of its docstring"]),
        Fact("params", "list", params, pos=ppos, names=[["parameters"], ["arguments"], ["param", "names"]],
             label={"en": "Parameters", "de": "Parameter", "fr": "Paramètres", "es": "Parámetros"},
             desc=["names of the parameters, in order (without * and **)"]),
        Fact("defaults", "objects", [1] * len(items), items=items, region=regions, pos=True,
             sub=[("name", "span", [["name"], ["param"]], {"en": "Name"}),
                  ("default", "span", [["default"], ["default", "value"]], {"en": "Default"})],
             names=[["signature"], ["params", "with", "defaults"]],
             label={"en": "Signature"}, desc=["each parameter with its default value, if any"]),
        Fact("blurb", "gen", summary, names=[["one", "line", "summary"], ["blurb"]],
             desc=["say in one line what the function does"]),
        Fact("variadic", "bool", bool(a.vararg or a.kwarg),
             names=[["variadic"], ["takes", "varargs"], ["accepts", "extra", "arguments"]],
             neg=([["fixed", "arity"], ["no", "varargs"]], ["true if it takes no *args or **kwargs"]),
             desc=["does it accept *args or **kwargs?"]),
    ]
    return Entity(f"{mod}.{node.name}", f"{mod}.{node.name}", facts, raw=w.finish()[0])


def entities(paths, rng, n):
    out = []
    for p in rng.sample(paths, len(paths)):
        fns = _functions(p)
        rng.shuffle(fns)
        for node, doc in fns[:3]:
            e = entity(p, node, doc)
            if e is not None:
                out.append(e)
        if len(out) >= n:
            break
    return out[:n]
