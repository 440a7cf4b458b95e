#!/usr/bin/env python3
"""Human-written Q&A sets for `deg cartridge eval --qa`, extracted from FAQs Debian ships.

Every question and reference answer is text of the FAQ's own question/answer
pairs, written by the FAQ's authors (nobody in this project, no model):
the question is the FAQ entry's heading, the reference answer is the first
paragraph of the entry's answer (whitespace joined; cut after the sentence
that reaches 60 words). The corpus is the whole document as shipped, answers
included: a cartridge is meant to learn what the document says; see
bench/README.md ("Human-written Q&A") for how the first-p-tokens overlap with
the corpus-init control is reported.

  python3 bench/qa/extract_qa.py [--out bench/qa] [--check]

writes (or with --check, compares against) one JSON file per set, and for
the questions written by hand (bench/qa/handwritten.py) a NAME-para.json per
FAQ set (the same answers asked in other words; items also keep the FAQ's
heading as "faq_question") and one set per hand-written document:
{"format": "deg-qa/1", "name", "source", "source_sha256", "kind", "items":
[{"id", "question", "answer", "offset"}]} where offset is the answer's
character offset in the source text (decompressed). The source's sha256 is
checked so a different package version is an error, not a silently
different set. Reserved texts (debian/copyright, package METADATA/PKG-INFO)
are never used.
"""
import argparse
import gzip
import hashlib
import json
import re
import sys
from pathlib import Path

MAX_WORDS = 60


def read_source(path):
    data = Path(path).read_bytes()
    if path.endswith(".gz"):
        data = gzip.decompress(data)
    return data.decode("utf-8")


def _squash(s):
    return re.sub(r"\s+", " ", s).strip()


def reference(block):
    """First paragraph of an answer block (and the next ones while it ends
    with ':'), joined, cut after the sentence that reaches MAX_WORDS words."""
    paras = [p for p in re.split(r"\n[ \t]*\n", block.strip("\n")) if p.strip()]
    text = _squash(paras[0]) if paras else ""
    for more in paras[1:]:  # "... So:" introduces the command that answers
        if not text.endswith(":"):
            break
        text += " " + _squash(more)
    words, out = 0, []
    for sent in re.split(r"(?<=[.!?])\s+", text):
        out.append(sent)
        words += len(sent.split())
        if words >= MAX_WORDS:
            break
    return " ".join(out)


def procps(text):
    """procps FAQ: a question line at column 0, the answer tab-indented."""
    items = []
    for m in re.finditer(r"^(\S[^\n]*\?)\n\n((?:[ \t][^\n]*\n|\n)+)", text, re.M):
        items.append((m.group(1), m.group(2), m.start(2)))
    return items


def xz(text):
    """XZ Utils FAQ: 'Q:  ...' then 'A:  ...' blocks."""
    items = []
    for m in re.finditer(r"^Q:\s+(.*?)\n\s*\nA:(.*?)(?=\n\s*\nQ:|\Z)", text, re.M | re.S):
        items.append((_squash(m.group(1)), "   " + m.group(2), m.start(2)))
    return items


def zlib(text):
    """zlib FAQ: ' N. question' (possibly over several lines), blank, the
    answer indented by four spaces."""
    items = []
    pat = re.compile(r"^ ?\d+\. (.*?)\n\s*\n(.*?)(?=\n ?\d+\. |\Z)", re.M | re.S)
    for m in pat.finditer(text):
        items.append((_squash(m.group(1)), m.group(2), m.start(2)))
    return items


SETS = [  # name, source, kind, parser
    ("procps-faq", "/usr/share/doc/procps/FAQ.gz",
     "system tool FAQ (ps/top behaviour, project history)", procps),
    ("xz-faq", "/usr/share/doc/xz-utils/faq.txt.gz",
     "compression format and tool FAQ (xz, LZMA)", xz),
    ("zlib-faq", "/usr/share/doc/zlib1g-dev/FAQ.gz",
     "programming library FAQ (zlib API, licensing, formats)", zlib),
]


def build(name, source, kind, parser):
    text = read_source(source)
    items = []
    for q, block, off in parser(text):
        a = reference(block)
        if not q or not a:
            continue
        items.append({"id": len(items), "question": q, "answer": a,
                      "offset": off})
    return {"format": "deg-qa/1", "name": name, "source": source,
            "source_sha256": hashlib.sha256(text.encode()).hexdigest(), "kind": kind,
            "extracted_by": "bench/qa/extract_qa.py", "items": items}


def _handwritten():
    sys.path.insert(0, str(Path(__file__).parent))
    import handwritten
    return handwritten


def paraphrased(qa, questions):
    """The set qa with the hand-written questions (id -> question) instead of
    the FAQ's headings, for the items that have one; answers and offsets
    unchanged."""
    items = [dict(it, question=questions[it["id"]], faq_question=it["question"])
             for it in qa["items"] if it["id"] in questions]
    missing = set(questions) - {it["id"] for it in qa["items"]}
    if missing:
        raise SystemExit(f"{qa['name']}: no extracted items {sorted(missing)} to paraphrase")
    return dict(qa, name=qa["name"] + "-para", extracted_by="bench/qa/extract_qa.py + "
                "bench/qa/handwritten.py (questions written by hand, not the FAQ's headings)",
                items=items)


def document(doc):
    """A hand-written set over a document: each reference answer is located
    in the source (whitespace-normalised) for its offset."""
    text = read_source(doc["source"])
    items = []
    for q, a in doc["items"]:
        pat = r"\s+".join(re.escape(w) for w in a.split())
        m = re.search(pat, text)
        if not m:
            raise SystemExit(f"{doc['name']}: answer not found in {doc['source']}: {a[:60]!r}")
        items.append({"id": len(items), "question": q, "answer": _squash(a), "offset": m.start()})
    return {"format": "deg-qa/1", "name": doc["name"], "source": doc["source"],
            "source_sha256": hashlib.sha256(text.encode()).hexdigest(), "kind": doc["kind"],
            "extracted_by": "bench/qa/handwritten.py (questions and answers chosen by hand; "
                            "answers quote the document)", "items": items}


def all_sets():
    hw = _handwritten()
    for name, source, kind, parser in SETS:
        qa = build(name, source, kind, parser)
        yield qa
        if name in hw.PARAPHRASES:
            yield paraphrased(qa, hw.PARAPHRASES[name])
    for doc in hw.DOCUMENTS:
        yield document(doc)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=str(Path(__file__).parent))
    ap.add_argument("--check", action="store_true",
                    help="compare with the files in --out instead of writing them")
    args = ap.parse_args(argv)
    bad = 0
    for qa in all_sets():
        name, source = qa["name"], qa["source"]
        f = Path(args.out) / f"{name}.json"
        blob = json.dumps(qa, indent=1, ensure_ascii=False) + "\n"
        if args.check:
            old = f.read_text() if f.exists() else ""
            ok = old == blob
            bad += not ok
            print(f"{f}: {'same' if ok else 'DIFFERENT'} ({len(qa['items'])} items)")
        else:
            if f.exists():
                prev = json.loads(f.read_text())
                if prev["source_sha256"] != qa["source_sha256"]:
                    print(f"{source}: text differs from the one {f} was made from "
                          f"(sha256 {prev['source_sha256'][:12]}...); not overwritten",
                          file=sys.stderr)
                    bad += 1
                    continue
            f.write_text(blob)
            print(f"{f}: {len(qa['items'])} items from {source}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
