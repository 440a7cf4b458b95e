"""The held-out real-document set (issue 12): DEP-5 copyright files and Python
package metadata found on this machine, turned into evaluation records.

    python -m deg.evaluate.heldout --out heldout.jsonl [--per-kind 50] [--seed 0]
        [--max-tokens 1536] [--copyright-glob G] [--site-packages DIR ...]
    python -m deg.evaluate --records heldout.jsonl --split heldout --system deg ...

Both kinds are reserved for evaluation: never datagen, training or tuning.
Records have the datagen record layout (id, split "heldout", source "dep5" |
"pymetadata", template "file", doc, context, schema, value) plus `path` and
`sha256`, so every system of deg.evaluate runs on them unchanged.

Choice of documents (deterministic for a given machine state):
  1. candidates: DEP-5 files = --copyright-glob (default
     /usr/share/doc/*/copyright) whose first line is the copyright-format 1.0
     Format header; metadata = every <root>/*.dist-info/METADATA and
     <root>/*.egg-info/PKG-INFO under the --site-packages roots (default: this
     interpreter's purelib, its base interpreter's (pyenv), and
     /usr/lib/python3/dist-packages), paths sorted;
  2. a candidate is kept if it is valid UTF-8, its gold value parses (see
     heldout_gold) and the schema accepts it (python-jsonschema with format
     checks, and deg's validator), it has at most --max-tokens tokens under
     the model's tokenizer (documents are never cut), and its bytes differ from
     every earlier kept candidate (copies shared by binary packages of one
     source, or one distribution in two roots, count once);
  3. random.Random(f"{seed}:{kind}").sample(kept, per_kind), in path order.
The document text given to a system is the file as is. The manifest written
next to the records (<out>.manifest.json) lists the roots, candidate and
kept counts, why candidates were dropped, and each chosen file's sha256:
the machine state the numbers depend on.
"""
import argparse
import glob
import hashlib
import json
import logging
import os
import platform
import random
import sys
import sysconfig
import time

from .heldout_gold import DEP5_SCHEMA, METADATA_SCHEMA, GoldError, gold_dep5, gold_metadata, is_dep5

__all__ = ["default_site_packages", "dep5_candidates", "metadata_candidates", "build", "main"]

KINDS = {"dep5": (DEP5_SCHEMA, gold_dep5), "pymetadata": (METADATA_SCHEMA, gold_metadata)}


def default_site_packages():
    """This interpreter's purelib, its base interpreter's, Debian's dist-packages
    (those that exist, each once)."""
    roots = [sysconfig.get_paths()["purelib"],
             sysconfig.get_paths(vars={"base": sys.base_prefix, "platbase": sys.base_prefix})["purelib"],
             "/usr/lib/python3/dist-packages"]
    out = []
    for r in roots:
        r = os.path.realpath(r)
        if os.path.isdir(r) and r not in out:
            out.append(r)
    return out


def dep5_candidates(pattern="/usr/share/doc/*/copyright"):
    return sorted(glob.glob(pattern))


def metadata_candidates(roots):
    out = []
    for root in roots:
        out += glob.glob(os.path.join(root, "*.dist-info", "METADATA"))
        out += glob.glob(os.path.join(root, "*.egg-info", "PKG-INFO"))
    return sorted(out)


def _doc_id(kind, path):
    if kind == "dep5":
        return "dep5/" + os.path.basename(os.path.dirname(path))
    return "pymetadata/" + os.path.basename(os.path.dirname(path))


def _schema_errors(schema, value):
    """Problems python-jsonschema (Draft 2020-12, format checks on) and deg's
    validator find in value; [] when both accept it."""
    import jsonschema
    from ..parsers import validate
    v = jsonschema.Draft202012Validator(schema, format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER)
    errs = [e.message for e in v.iter_errors(value)]
    return errs + [str(e) for e in validate(schema, value)]


def _keep(kind, paths, count_tokens, max_tokens, why):
    """([(path, text, gold, n_tokens, sha256)] of the candidates that pass rule 2,
    the number of files read in the kind's format); `why` counts the dropped."""
    schema, gold_of = KINDS[kind]
    seen, out = set(), []
    n_format = 0
    for p in paths:
        try:
            raw = open(p, "rb").read()
            text = raw.decode("utf-8")
        except (OSError, UnicodeDecodeError):
            why[f"{kind}: unreadable or not UTF-8"] = why.get(f"{kind}: unreadable or not UTF-8", 0) + 1
            continue
        if kind == "dep5" and not is_dep5(text):
            continue  # not a candidate at all
        n_format += 1
        h = hashlib.sha256(raw).hexdigest()
        if h in seen:
            why[f"{kind}: duplicate bytes"] = why.get(f"{kind}: duplicate bytes", 0) + 1
            continue
        seen.add(h)
        try:
            gold = gold_of(text)
        except GoldError as e:
            key = f"{kind}: gold: {str(e)[:60]}"
            why[key] = why.get(key, 0) + 1
            continue
        if _schema_errors(schema, gold):
            why[f"{kind}: gold fails the schema"] = why.get(f"{kind}: gold fails the schema", 0) + 1
            continue
        n = count_tokens(text)
        if n > max_tokens:
            why[f"{kind}: over {max_tokens} tokens"] = why.get(f"{kind}: over {max_tokens} tokens", 0) + 1
            continue
        out.append((p, text, gold, n, h))
    return out, n_format


def build(per_kind=50, seed=0, max_tokens=1536, copyright_glob="/usr/share/doc/*/copyright",
          roots=None, count_tokens=None):
    """(records, manifest) as described in the module doc. count_tokens(text)
    -> int; default: the default model's tokenizer."""
    logging.getLogger("debian").setLevel(logging.ERROR)  # python-debian's "Fixing Format URL"
    if count_tokens is None:
        from ..fetch import default_model_path
        from ..model import load_model
        m = load_model(default_model_path())
        count_tokens = lambda t: len(m.tokenize(t))  # noqa: E731
    roots = default_site_packages() if roots is None else list(roots)
    cands = {"dep5": dep5_candidates(copyright_glob), "pymetadata": metadata_candidates(roots)}
    why, records, manifest = {}, [], {"kinds": {}}
    for kind, paths in cands.items():
        kept, n_format = _keep(kind, paths, count_tokens, max_tokens, why)
        rng = random.Random(f"{seed}:{kind}")
        pick = sorted(rng.sample(range(len(kept)), min(per_kind, len(kept))))
        ids = set()
        for i in pick:
            p, text, gold, n, h = kept[i]
            rid = _doc_id(kind, p)
            while rid in ids:
                rid += "+"
            ids.add(rid)
            records.append({"id": rid, "split": "heldout", "source": kind, "template": "file",
                            "doc": os.path.basename(os.path.dirname(p)), "path": p, "sha256": h,
                            "tokens": n, "context": text, "schema": KINDS[kind][0], "value": gold})
        manifest["kinds"][kind] = dict({"files": len(paths)},
                                       **({"dep5": n_format} if kind == "dep5" else {}),
                                       kept=len(kept), chosen=len(pick))
    manifest.update(
        per_kind=per_kind, seed=seed, max_tokens=max_tokens, copyright_glob=copyright_glob,
        site_packages=roots, dropped=dict(sorted(why.items())), host=platform.node(),
        platform=platform.platform(), python=sys.version.split()[0],
        built_utc=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        python_debian=_version("python-debian"), packaging=_version("packaging"),
        chosen=[{"id": r["id"], "path": r["path"], "sha256": r["sha256"], "tokens": r["tokens"]}
                for r in records])
    return records, manifest


def _version(dist):
    from importlib.metadata import PackageNotFoundError, version
    try:
        return version(dist)
    except PackageNotFoundError:
        return None


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python -m deg.evaluate.heldout", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True, help="records JSONL to write")
    ap.add_argument("--per-kind", type=int, default=50)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--max-tokens", type=int, default=1536,
                    help="keep documents of at most this many tokens (default model's tokenizer)")
    ap.add_argument("--copyright-glob", default="/usr/share/doc/*/copyright")
    ap.add_argument("--site-packages", action="append", default=None, metavar="DIR",
                    help="metadata root (repeatable; default: see the module doc)")
    a = ap.parse_args(argv)
    if a.per_kind < 1:
        raise SystemExit("--per-kind must be >= 1")
    for r in a.site_packages or []:
        if not os.path.isdir(r):
            raise SystemExit(f"--site-packages {r}: not a directory")
    records, manifest = build(a.per_kind, a.seed, a.max_tokens, a.copyright_glob, a.site_packages)
    tmp = a.out + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        for r in records:
            f.write(json.dumps(r, ensure_ascii=False) + "\n")
    os.replace(tmp, a.out)
    with open(a.out + ".manifest.json", "w", encoding="utf-8") as f:
        json.dump(manifest, f, indent=1, ensure_ascii=False)
    print(json.dumps({k: v for k, v in manifest.items() if k != "chosen"}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
