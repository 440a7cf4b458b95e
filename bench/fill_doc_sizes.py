"""Fill time by document size: how long deg.fill takes on 1 to 48 KB of real text, next to
the forward-only prefill of the same tokens measured in the same run.

    python bench/fill_doc_sizes.py [--threads 1] [--repeats 3] [--sizes 1,4,16,48]

The documents are the first N KB of this machine's dpkg status file (/var/lib/dpkg/status,
cut at a paragraph's end), the schema asks five facts of its first paragraph (name,
version, maintainer e-mail, homepage, priority). For each size it prints the context tokens,
the median wall time of deg.fill with the shipped checkpoint, of Model.prefill of the
context's tokens (the least any reader of the document pays: one forward pass), their
ratio, and fill's own split from the debug timing (prefill_s, forks_s). Why: new users
asked how long a fill takes on a long file (issue 12's checks: two 43-54 KB headers gave no
answer within 200 s on busy cores). Run it on quiet cores: other jobs make every figure
meaningless (bench/README.md)."""
import argparse
import statistics
import time

import deg

STATUS = "/var/lib/dpkg/status"
SCHEMA = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "description": "package name"},
        "version": {"type": "string", "description": "package version"},
        "maintainer_email": {"type": ["string", "null"], "format": "email",
                             "description": "e-mail address of the maintainer"},
        "homepage": {"type": ["string", "null"], "format": "uri",
                     "description": "project homepage URL"},
        "priority": {"enum": ["required", "important", "standard", "optional", "extra"]},
    },
    "required": ["name", "version", "maintainer_email", "homepage", "priority"],
}


def window(kb):
    """The first kb KB of the status file, cut after the last whole paragraph."""
    with open(STATUS, encoding="utf-8") as f:
        text = f.read(kb * 1024 + 4096)
    cut = text.rfind("\n\n", 0, kb * 1024)
    if cut < 0:
        raise SystemExit(f"{STATUS}: no paragraph ends within {kb} KB")
    return text[:cut + 1]


def median_seconds(fn, repeats):
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times), out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--sizes", default="1,4,16,48", help="KB, comma-separated")
    a = ap.parse_args(argv)
    sizes = [int(x) for x in a.sizes.split(",")]
    if a.threads < 1 or a.repeats < 1 or not sizes or min(sizes) < 1:
        ap.error("--threads, --repeats and every size must be >= 1")
    deg.set_num_threads(a.threads)
    model = deg.load_model(deg.ckpt_backbone_path())
    ck = deg.load(debug=True, model=model)
    print(f"deg {deg.__version__}, checkpoint {deg.default_checkpoint_path()}, "
          f"{a.threads} thread(s), median of {a.repeats}")
    print("| KB | context tokens | fill s | prefill-only s | fill / prefill | fill prefill_s | "
          "fill forks_s |")
    print("|---|---|---|---|---|---|---|")
    for kb in sizes:
        doc = window(kb)
        ids = model.tokenize(doc)
        t_fill, resp = median_seconds(lambda: ck.fill(doc, SCHEMA), a.repeats)
        t_pre, _ = median_seconds(lambda: model.trunk().prefill(ids, logits=None), a.repeats)
        timing = resp.get("timing") or {}
        print(f"| {len(doc) / 1024:.1f} | {len(ids)} | {t_fill:.2f} | {t_pre:.2f} | "
              f"{t_fill / t_pre:.2f} | {timing.get('prefill_s', float('nan')):.2f} | "
              f"{timing.get('forks_s', float('nan')):.2f} |")


if __name__ == "__main__":
    main()
