"""Differential replay of the fuzz corpora against reference implementations (issue 19).

libdeg's verdict on each input (fuzz_verdict, built with the fuzz targets)
against the reference's on the same bytes:

  utf8         dg_utf8_validate     vs  Python's UTF-8 decoder (bytes.decode("utf-8"), strict)
  safetensors  dg_safetensors_open  vs  the `safetensors` package (its Rust core's deserialize)
  gguf         dg_gguf_open         vs  the `gguf` package (GGUFReader: header, keys, tensor infos
                                        and data views)
  validate     deg_validate         vs  python-jsonschema (Draft 2020-12, check_schema + is_valid)

Inputs: the corpora libFuzzer grew (build-fuzz/corpus/<target>/), the seeds
scripts/fuzz wrote (build-fuzz/seeds/<target>/) and the regression inputs kept
in the repo (tests/fuzz/regressions/<kind>/), newest-first within a time
budget. Every disagreement is either a documented difference (KNOWN below:
where deg deliberately differs, and why) or a failure: its input is copied to
build-fuzz/diff/<kind>/ and the exit status is 1. A disagreement on an input
the fuzzer grew in this run (corpus/) is reported as NEW and copied likewise,
but fails only with --strict: the corpus differs from run to run, so CI gates
on the seeds and the kept regression inputs (deterministic) and reports the
rest for triage. Prints, per kind, inputs
checked, inputs/s, agreements, documented differences by reason, failures.

    python tests/fuzz/diff.py --tool build-fuzz/tests/fuzz/fuzz_verdict --seconds 5
    python tests/fuzz/diff.py --tool ... --seconds 5 utf8 gguf
"""
import argparse
import json
import os
import re
import resource
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# kind -> the fuzz targets whose corpora hold inputs of that kind
SOURCES = {"utf8": ["parse", "tokenize"], "safetensors": ["safetensors"], "gguf": ["gguf"],
           "validate": ["validate"]}
CHUNK = 64  # files per fuzz_verdict run
# A reference run on one input gets REF_SECONDS of wall time and this process at
# most REF_MEMORY bytes of address space: a fuzzed GGUF header declaring an array
# of 3.7e18 elements made gguf.GGUFReader grow to 10 GB over more than 10 minutes
# (libdeg rejects it in 16 ms). Such an input counts as the reference rejecting it.
REF_SECONDS = 10
REF_MEMORY = 3 << 30


class RefExhausted(BaseException):
    """The reference ran out of its time or memory budget on one input."""


def _on_alarm(signum, frame):
    raise RefExhausted(f"more than {REF_SECONDS} s")


def bounded(fn, *args):
    """fn(*args) under REF_SECONDS; MemoryError and the alarm become RefExhausted."""
    old = signal.signal(signal.SIGALRM, _on_alarm)
    signal.alarm(REF_SECONDS)
    try:
        return fn(*args)
    except MemoryError as e:
        raise RefExhausted(f"MemoryError {e}") from None
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


def _limit_memory():
    """Lower this process's soft RLIMIT_AS to REF_MEMORY (children raise it back)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    if hard == resource.RLIM_INFINITY or hard > REF_MEMORY:
        resource.setrlimit(resource.RLIMIT_AS, (REF_MEMORY, hard))


def _unlimit_memory():
    """preexec_fn of fuzz_verdict: the soft limit back at the hard one (an ASan
    binary reserves terabytes of address space)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    resource.setrlimit(resource.RLIMIT_AS, (hard, hard))


# ------------------------------------------------------------- references

def ref_utf8(data):
    try:
        data.decode("utf-8")
        return True, ""
    except UnicodeDecodeError as e:
        return False, str(e)


def ref_safetensors(data, path):
    """The Rust core's deserialize over the bytes (header, offsets, every
    tensor's bytes; no framework: numpy has no bfloat16)."""
    from safetensors._safetensors_rust import deserialize
    try:
        deserialize(data)
        return True, ""
    except Exception as e:  # noqa: BLE001 - the reference's verdict
        return False, f"{type(e).__name__}: {e}"


def ref_gguf(data, path):
    import warnings
    from gguf import GGUFReader
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            r = GGUFReader(path)
            for t in r.tensors:
                t.data.shape  # noqa: B018 - the data view exists
        return True, ""
    except Exception as e:  # noqa: BLE001
        return False, f"{type(e).__name__}: {e}"


def _strict_json(text):
    """json.loads as jansson reads a document: NaN/Infinity are not JSON, nor
    lone surrogate escapes (RFC 8259 §8.2 leaves them undefined; jansson
    refuses them)."""
    def bad_const(name):
        raise ValueError(f"{name} is not JSON")
    return json.loads(text, parse_constant=bad_const)


def _unresolvable():
    import jsonschema
    kinds = [jsonschema.exceptions.RefResolutionError]
    try:
        import referencing.exceptions
        kinds.append(referencing.exceptions.Unresolvable)
    except ImportError:
        pass
    return tuple(kinds)


def ref_validate(data):
    """(verdict, detail): verdict "ok0" valid, "ok+" invalid, "json" a document
    is not JSON, "schema" the schema is not a valid 2020-12 schema, "skip"."""
    import jsonschema
    z = data.find(b"\0")
    if z < 0:
        return "skip", ""
    try:  # deg reads and checks the schema first, then reads the value
        schema = _strict_json(data[:z].decode("utf-8"))
    except (ValueError, UnicodeDecodeError, RecursionError) as e:
        return "json", str(e)
    try:
        cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
        cls.check_schema(schema)
    except jsonschema.SchemaError as e:
        return "schema", e.message
    except Exception as e:  # noqa: BLE001
        return "error", f"{type(e).__name__}: {e}"
    try:
        value = _strict_json(data[z + 1:].split(b"\0")[0].decode("utf-8"))
    except (ValueError, UnicodeDecodeError, RecursionError) as e:
        return "json", str(e)
    try:  # every error (deg lists every violation, and so reaches every $ref)
        v = cls(schema, format_checker=cls.FORMAT_CHECKER)
        return ("ok0" if not list(v.iter_errors(value)) else "ok+"), ""
    except _unresolvable() as e:
        return "schema", f"unresolvable $ref: {e}"
    except jsonschema.SchemaError as e:
        return "schema", e.message
    except Exception as e:  # noqa: BLE001 - e.g. a $ref to a non-schema crashes it
        return "error", f"{type(e).__name__}: {e}"


# ----------------------------------------------- documented differences

def _walk(node):
    if isinstance(node, dict):
        yield node
        for v in node.values():
            yield from _walk(v)
    elif isinstance(node, list):
        for v in node:
            yield from _walk(v)


def _schema_of(data):
    try:
        return json.loads(data[:data.find(b"\0")].decode("utf-8"))
    except Exception:  # noqa: BLE001
        return None


def _has_key(schema, key):
    return any(key in d for d in _walk(schema))


# The first draft whose meta-schema has each annotation deg reads in every draft
# (contract §5's list); jsonschema ignores a keyword the schema's draft does not
# define. (writeOnly is in draft-07's text but not in the draft-07 meta-schema.)
LATER_ANNOTATIONS = {"examples": 6, "$id": 6, "$comment": 7, "readOnly": 7, "writeOnly": 2019,
                     "$defs": 2019, "$anchor": 2019, "deprecated": 2019}
DRAFTS = {"http://json-schema.org/draft-04/schema": 4, "http://json-schema.org/draft-06/schema": 6,
          "http://json-schema.org/draft-07/schema": 7,
          "https://json-schema.org/draft/2019-09/schema": 2019}


def _draft_of(schema):
    s = schema.get("$schema") if isinstance(schema, dict) else None
    return DRAFTS.get(s.rstrip("#"), 2020) if isinstance(s, str) else 2020


def _error_loc(deg):
    """The keyword path of deg's 'schema at "/a/b": ...' message, or None."""
    m = re.match(r'reject DEG_ERR_SCHEMA (?:validate: )?schema at "([^"]*)"', deg)
    return m.group(1).split("/")[1:] if m else None


def _keywords_on(path):
    """The segments of a schema path that stand at keyword positions (not property
    names under properties / $defs / definitions, nor anyOf / oneOf indexes)."""
    out, at_schema = [], True
    for seg in path:
        if not at_schema:
            at_schema = True
            continue
        out.append(seg)
        at_schema = seg not in ("properties", "$defs", "definitions", "anyOf", "oneOf")
    return out


def _embedded_ids(schema):
    """Does a subschema below the root carry an $id (draft-04: id)? Then jsonschema
    resolves the "#..." references inside it against that subschema, not the root."""
    key = "id" if _draft_of(schema) == 4 else "$id"

    def subschemas(node):
        if not isinstance(node, dict):
            return
        for k, v in node.items():
            if k in ("properties", "$defs", "definitions") and isinstance(v, dict):
                yield from v.values()
            elif k in ("anyOf", "oneOf") and isinstance(v, list):
                yield from v
            elif k in ("items", "additionalProperties"):
                yield v

    todo = list(subschemas(schema))
    while todo:
        node = todo.pop()
        if isinstance(node, dict) and isinstance(node.get(key), str) \
                and not node[key].startswith("#"):
            return True
        todo += subschemas(node)
    return False


def _ref_resolves(schema, loc):
    """Does jsonschema's resolver (referencing) resolve the $ref at loc from the root, to
    a schema (an object or a boolean)?"""
    import referencing
    import referencing.jsonschema
    node = schema
    for seg in loc:
        seg = seg.replace("~1", "/").replace("~0", "~")
        try:
            node = node[int(seg)] if isinstance(node, list) else node[seg]
        except (KeyError, IndexError, ValueError, TypeError):
            return True  # not found: not this rule's case
    if not isinstance(node, str):
        return True
    spec = referencing.jsonschema.specification_with(
        schema.get("$schema", ""), default=referencing.jsonschema.DRAFT202012)
    try:
        resolver = referencing.Registry().resolver_with_root(spec.create_resource(schema))
        return isinstance(resolver.lookup(node).contents, (dict, bool))
    except Exception:  # noqa: BLE001 - Unresolvable, or a crash on the pointer
        return False


def known_validate(data, deg, ref):
    """The reason deg's validate verdict may differ here, or None."""
    schema = _schema_of(data)
    if deg.startswith("reject DEG_ERR_SCHEMA") and ("unsupported keyword" in deg
                                                   or 'tuple "items": [...] is not supported' in deg):
        # deg refuses keywords it does not apply (issue 19 item 8: an error
        # rather than a silent pass; tuple items: [...] is on §5's list too),
        # where jsonschema applies them
        return "keyword deg does not apply (an error, contract §5)"
    if re.match(r"reject DEG_ERR_FORMAT .*(real number overflow|too big (negative )?integer)", deg):
        # jansson reads numbers as int64 or double and refuses the others
        # (RFC 8259 §6 lets a parser limit the range); Python reads big
        # integers exactly and 1e400 as inf
        return "number beyond int64 / double refused (RFC 8259 §6 limits)"
    if deg.startswith("reject DEG_ERR_SCHEMA") and "is not local" in deg and ref != "schema":
        # deg resolves local references only ("#", "#/...", contract §5);
        # jsonschema resolves others against the base URI
        return "$ref local only (jsonschema: any URI)"
    if deg.startswith("reject DEG_ERR_SCHEMA") and "unknown $schema" in deg:
        # deg reads the drafts it implements and refuses another $schema URI;
        # jsonschema falls back to its default draft for an unknown one
        return "unknown $schema refused (jsonschema: its default draft)"
    if schema is None:
        return None
    rejects = deg.startswith("reject DEG_ERR_SCHEMA")
    if rejects and "(checked as the target of the $ref at" in deg:
        # a $ref's target must be a schema (2020-12 core §8.2.3.1), so one that is
        # not a valid schema ("minimum": true, validation §6.2.4: MUST be a
        # number) makes the document invalid; jsonschema's check_schema checks
        # only the meta-schema's positions (not "#/x" under an unknown keyword)
        # and then applies the target as it is (True compares as 1)
        return "$ref target checked as a schema (jsonschema's check_schema does not reach it)"
    if rejects and ("bad JSON pointer escape" in deg or "is not an array index" in deg):
        # RFC 6901 §3: "~" is followed by 0 or 1; §4: an array index is 0 or
        # digits without a leading 0 ("-" names no element); §7: an error.
        # jsonschema (referencing) leaves "~2" as it is and reads an index
        # with Python's int() ("-1": the last element, "01": 1)
        return "$ref JSON pointer syntax (RFC 6901 §3, §4; jsonschema: lenient)"
    if rejects and "plain-name fragments are not supported" in deg:
        # deg's $ref is "#" or "#/json/pointer" only (contract §5); jsonschema
        # also resolves "#name" to the subschema whose $anchor is name
        return "$ref by JSON pointer only (contract §5; jsonschema: $anchor names)"
    if rejects and "percent-decodes to bytes that are not UTF-8" in deg:
        # a pointer fragment is the UTF-8 percent-encoding of a Unicode string
        # (RFC 6901 §6, RFC 3986 §2.5); Python's unquote turns bad bytes into U+FFFD
        return "$ref fragment not UTF-8 once decoded (jsonschema: U+FFFD)"
    loc = _error_loc(deg)
    if rejects and loc and loc[-1] == "$ref" and _draft_of(schema) == 4 \
            and ("is not a URI reference" in deg or "bad percent-encoding" in deg):
        # a $ref is a URI reference in every draft (draft-04: a JSON Reference,
        # whose "$ref" is a URI, RFC 3986: a space is %20, a '%' is %25);
        # draft-04's meta-schema gives $ref no format, so jsonschema resolves
        # "#/a b" or "#/%" there
        return "$ref not a URI reference in draft-04 (its meta-schema does not check)"
    if rejects and loc and loc[-1] == "$ref" and not _embedded_ids(schema) \
            and not _ref_resolves(schema, loc):
        # deg resolves every $ref when it checks the schema (contract §5: a $ref
        # must resolve locally, to a schema), before it reads the value;
        # jsonschema resolves a $ref only when validation reaches it: never when
        # the value is not JSON or does not reach it (its resolver finds no
        # schema there either)
        return "$ref resolved with the schema (jsonschema: when validation reaches it)"
    if rejects and loc and any(LATER_ANNOTATIONS.get(k, 0) > _draft_of(schema)
                               for k in _keywords_on(loc)):
        # deg reads its annotations ($defs, $comment, $anchor, readOnly, ...:
        # contract §5's list) and checks their values in every draft;
        # jsonschema ignores a keyword the schema's draft does not define
        return "deg's annotations read in every draft (jsonschema: unknown in this draft)"
    if (deg.startswith("reject DEG_ERR_SCHEMA") and ref != "schema"
            and any(k.startswith("x-") and f"/{k}" in deg for d in _walk(schema) for k in d)):
        # deg's own annotations (x-generate, x-levels, ...: contract §5) are
        # checked; jsonschema ignores keywords it does not know
        return "deg's x-* annotations checked (jsonschema ignores unknown keywords)"
    if deg.startswith("ok ") and deg != "ok 0" and ref == "ok0" and _has_key(schema, "format"):
        # deg stricter only: JSON Schema makes format an annotation and
        # jsonschema's checkers are lax (email: contains "@"); deg asserts its
        # own format checks (contract §5)
        return "format assertion (deg's checks, §5)"
    if deg.startswith("ok ") and ref in ("ok0", "ok+") and _has_key(schema, "multipleOf"):
        # the spec defines multipleOf on the decimal value (validation §6.2.1:
        # "division by this keyword's value results in an integer");
        # jsonschema divides binary floats (4.02 / 0.01 = 401.99999999999994:
        # "not a multiple"; 1 / 2.6381721e-58 = 3.79e57, an integral float:
        # "a multiple", though 10^65 / 26381721 is not an integer); deg is
        # decimal-exact (issue 19 item 6)
        return "multipleOf on the decimal value (jsonschema: binary floats)"
    pats = [d["pattern"] for d in _walk(schema) if isinstance(d.get("pattern"), str)]
    if any(_compiles(p) != _pcre_compiles(p, deg) for p in pats):
        # ECMA-262 regular expressions through PCRE2 (UTF + UCP, contract §5)
        # vs Python's re: a pattern one of them cannot compile
        return "pattern syntax (PCRE2 vs Python re)"
    return None


def _compiles(p):
    import re
    try:
        re.compile(p)
        return True
    except (re.error, OverflowError, RecursionError):
        return False


def _pcre_compiles(p, deg):
    return not (deg.startswith("reject DEG_ERR_SCHEMA") and "does not compile" in deg)


def known_gguf(data, deg, ref_ok, ref_msg):
    if ref_ok and deg.startswith("reject DEG_ERR_FORMAT") and "overlap in the file" in deg:
        # deg refuses two tensors whose data share bytes (a weight that aliases
        # another is a malformed or hostile file; safetensors' rule too); the
        # gguf package does not check
        return "overlapping tensor data refused (the gguf package does not check)"
    return None


def known_safetensors(data, deg, ref_ok, ref_msg):
    return None


def known_utf8(data, deg, ref_ok, ref_msg):
    return None


# --------------------------------------------------------------- replay

def inputs(kind, build):
    files = []
    for t in SOURCES[kind]:
        for d in (build / "corpus" / t, build / "seeds" / t):
            if d.is_dir():
                files += [p for p in d.iterdir() if p.is_file()]
    reg = ROOT / "tests" / "fuzz" / "regressions" / kind
    if reg.is_dir():
        files += [p for p in reg.iterdir() if p.is_file() and p.name != "README.md"]
    # regressions and seeds first, then the corpus newest first
    files.sort(key=lambda p: (p.parent.parent.name == "corpus", -p.stat().st_mtime))
    return files


def _run_tool(tool, kind, paths):
    out = subprocess.run([str(tool), kind] + [str(p) for p in paths], capture_output=True,
                         check=False, preexec_fn=_unlimit_memory)
    return out.returncode, out.stdout.decode("utf-8", "replace"), out.stderr


def verdicts(tool, kind, paths):
    """One verdict line per path. When a chunk's output does not split into one
    line per input (a message can quote a line break from the input), each input
    runs alone and its whole output, line breaks as spaces, is its verdict."""
    rc, text, err = _run_tool(tool, kind, paths)
    lines = text.splitlines()
    if rc == 0 and len(lines) == len(paths):
        return lines
    out = []
    for p in paths:
        rc, text, err = _run_tool(tool, kind, [p])
        if rc != 0:
            sys.stderr.write(err.decode("utf-8", "replace")[-4000:])
            raise SystemExit(f"diff.py: fuzz_verdict {kind} {p} failed (exit {rc})")
        out.append(" ".join(text.split("\n")).strip())
    return out


def compare(kind, path, deg):
    """None when deg and the reference agree, else (reason or None, detail)."""
    data = path.read_bytes()
    deg_ok = deg.startswith("ok")
    try:
        return _compare(kind, path, data, deg, deg_ok)
    except RefExhausted as e:
        if deg_ok:
            return None, f"deg: {deg} | reference: gave up ({e})"
        return f"reference exhausted its budget ({REF_SECONDS} s / {REF_MEMORY >> 30} GiB), deg rejects", ""


def _compare(kind, path, data, deg, deg_ok):
    if kind == "validate":
        ref, why = bounded(ref_validate, data)
        if ref == "skip" or deg == "skip":
            return None
        agree = {"ok0": deg == "ok 0", "ok+": deg_ok and deg != "ok 0",
                 "json": deg.startswith("reject DEG_ERR_FORMAT"),
                 "schema": deg.startswith("reject DEG_ERR_SCHEMA"),
                 # jsonschema crashes on some unusable schemas ($ref to a string)
                 "error": deg.startswith("reject DEG_ERR_SCHEMA")}.get(ref, False)
        if agree:
            return None
        return known_validate(data, deg, ref), f"deg: {deg} | jsonschema: {ref} {why}"
    if kind == "utf8":
        ref_ok, why = bounded(ref_utf8, data)
    elif kind == "safetensors":
        ref_ok, why = bounded(ref_safetensors, data, str(path))
    else:
        ref_ok, why = bounded(ref_gguf, data, str(path))
    if ref_ok == deg_ok:
        return None
    known = {"utf8": known_utf8, "safetensors": known_safetensors, "gguf": known_gguf}[kind]
    return known(data, deg, ref_ok, why), f"deg: {deg} | reference: {'ok' if ref_ok else why}"


def run_kind(tool, build, kind, budget):
    t0 = time.monotonic()
    files = inputs(kind, build)
    n = agree = 0
    known, failed, found = {}, [], []
    for i in range(0, len(files), CHUNK):
        if time.monotonic() - t0 > budget:
            break
        chunk = files[i:i + CHUNK]
        for p, v in zip(chunk, verdicts(tool, kind, chunk)):
            n += 1
            r = compare(kind, p, v)
            if r is None:
                agree += 1
            elif r[0]:
                known[r[0]] = known.get(r[0], 0) + 1
            elif _from_corpus(p):
                found.append((p, r[1]))
            else:
                failed.append((p, r[1]))
    dt = max(time.monotonic() - t0, 1e-9)
    return {"kind": kind, "inputs": n, "available": len(files), "per_s": n / dt, "agree": agree,
            "known": known, "failed": failed, "found": found}


def _from_corpus(p):
    """An input the fuzzer grew in this run (build-fuzz/corpus/), not a seed or a
    kept regression input: its corpus differs from run to run."""
    return p.parent.parent.name == "corpus"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tool", required=True, help="fuzz_verdict executable")
    ap.add_argument("--build", default=str(ROOT / "build-fuzz"),
                    help="the fuzz build (corpus/, seeds/; diff/ is written there)")
    ap.add_argument("--seconds", type=float, default=5.0, help="time budget per kind")
    ap.add_argument("--strict", action="store_true",
                    help="fail also on disagreements found in this run's fuzz corpus (default: "
                         "only seeds and kept regression inputs fail; corpus findings are "
                         "reported and copied to diff/ for triage)")
    ap.add_argument("kinds", nargs="*", default=list(SOURCES))
    a = ap.parse_args(argv)
    build = Path(a.build)
    _limit_memory()
    rc = 0
    print(f"{'kind':12s} {'inputs':>7s} {'of':>7s} {'in/s':>8s} {'agree':>7s} "
          f"{'known':>6s} {'FAILED':>6s} {'NEW':>5s}")
    for kind in a.kinds:
        if kind not in SOURCES:
            raise SystemExit(f"diff.py: unknown kind {kind} (known: {', '.join(SOURCES)})")
        r = run_kind(a.tool, build, kind, a.seconds)
        print(f"{kind:12s} {r['inputs']:7d} {r['available']:7d} {r['per_s']:8.0f} "
              f"{r['agree']:7d} {sum(r['known'].values()):6d} {len(r['failed']):6d} "
              f"{len(r['found']):5d}")
        for why, c in sorted(r["known"].items()):
            print(f"    documented difference x{c}: {why}")
        bad = r["failed"] + r["found"]
        if r["failed"] or (a.strict and r["found"]):
            rc = 1
        if bad:
            out = build / "diff" / kind
            out.mkdir(parents=True, exist_ok=True)
            for p, detail in bad[:20]:
                shutil.copy(p, out / p.name)
                tag = "NEW (this run's corpus)" if (p, detail) in r["found"] else "DISAGREE"
                print(f"    {tag} {p}: {detail[:300]}")
            print(f"    (inputs copied to {out}; keep one in tests/fuzz/regressions/{kind}/ "
                  "once it is fixed or documented)")
    return rc


if __name__ == "__main__":
    sys.exit(main())
