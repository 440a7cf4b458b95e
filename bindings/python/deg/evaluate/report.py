"""Markdown report and reliability diagrams of evaluate() results.

Plots need matplotlib (optional: `pip install matplotlib`); without it the
report says so and keeps the reliability tables.
"""
import json
import os

ROWS = [
    ("records", "records", "{:.0f}"),
    ("validity", "validity rate", "{:.3f}"),
    ("validity_jsonschema", "validity rate (python-jsonschema, formats checked)", "{:.3f}"),
    ("field_acc_mean", "mean field accuracy (every record x field)", "{:.3f}"),
    ("field_acc_macro", "field accuracy, mean over fields", "{:.3f}"),
    ("field_acc_as_given", "mean field accuracy, invalid responses' fields scored as given", "{:.3f}"),
    ("invalid_no_object_n", "invalid: no JSON object (e.g. cut at the token cap)", "{:.0f}"),
    ("invalid_schema_n", "invalid: object fails the schema", "{:.0f}"),
    ("errors", "errors raised", "{:.0f}"),
    ("choice_em", "choice exact match", "{:.3f}"),
    ("score_mae", "score MAE", "{:.3f}"),
    ("score_em", "score exact match", "{:.3f}"),
    ("noul_acc", "noul accuracy", "{:.3f}"),
    ("span_em", "span exact match", "{:.3f}"),
    ("span_f1", "span token F1", "{:.3f}"),
    ("generate_f1", "x-generate token F1 (against the gold text)", "{:.3f}"),
    ("generate_repeat", "x-generate values repeating a line", "{:.3f}"),
    ("number_em", "number EM (parsed)", "{:.3f}"),
    ("date_em", "date / date-time EM (parsed)", "{:.3f}"),
    ("null_precision", "null precision", "{:.3f}"),
    ("null_recall", "null recall", "{:.3f}"),
    ("array_count_acc", "array count accuracy", "{:.3f}"),
    ("array_item_em_aligned", "array item EM (aligned)", "{:.3f}"),
    ("ece_decide", "ECE decide (choice+score+noul)", "{:.3f}"),
    ("ece_choice", "ECE choice", "{:.3f}"),
    ("ece_score", "ECE score", "{:.3f}"),
    ("ece_noul", "ECE noul", "{:.3f}"),
    ("ece_extract", "ECE extract confidence", "{:.3f}"),
    ("prompt_tokens_mean", "prompt tokens / response", "{:.1f}"),
    ("generated_tokens_mean", "generated tokens / response", "{:.1f}"),
    ("total_tokens_mean", "total tokens / response", "{:.1f}"),
    ("latency_s_mean", "latency mean (s)", "{:.3f}"),
    ("latency_s_p50", "latency p50 (s)", "{:.3f}"),
    ("latency_s_p90", "latency p90 (s)", "{:.3f}"),
    ("generated_tokens_mean_valid", "generated tokens / valid response", "{:.1f}"),
    ("latency_s_mean_valid", "latency mean, valid responses (s)", "{:.3f}"),
    ("cpu_s_mean", "CPU time mean (s, all threads)", "{:.3f}"),
    ("cpu_s_n", "responses with CPU time", "{:.0f}"),
]

# (summary key, label, target ratio deg / baseline or None, lower is better)
RATIOS = [
    ("generated_tokens_mean", "generated tokens / response", 0.3),
    ("prompt_tokens_mean", "prompt tokens / response", None),
    ("total_tokens_mean", "total tokens / response", None),
    ("latency_s_mean", "latency mean", 0.33),
    ("latency_s_p50", "latency p50", None),
    ("latency_s_p90", "latency p90", None),
    ("generated_tokens_mean_valid", "generated tokens / valid response", None),
    ("latency_s_mean_valid", "latency mean, valid responses", None),
    ("cpu_s_mean", "CPU time mean", None),
]
# accuracy rows where deg must be ahead of the baseline (issue 6)
AHEAD = [("choice_em", "choice exact match"), ("noul_acc", "noul accuracy"),
         ("span_em", "span exact match"), ("field_acc_mean", "mean field accuracy")]


def _fmt(v, f):
    return "n/a" if v is None else f.format(v)


def _env_line(r):
    e = r.get("env") or {}
    if not e:
        return None
    la0, la1 = e.get("loadavg_start"), e.get("loadavg_end")
    load = (f"load average {la0[0]:.2f} at start, {la1[0]:.2f} at end"
            if la0 and la1 else "load average n/a")
    bits = [f"system `{e.get('system')}`", f"{e.get('threads')} threads",
            f"started {e.get('started_utc')}", f"wall {e.get('wall_s', 0):.0f} s", load,
            f"{e.get('nproc')} CPUs", f"git {e.get('git_commit')}"]
    if e.get("ckpt"):
        bits.append(f"ckpt {e['ckpt']}" + (" (RANDOM heads)" if e.get("random_heads") else ""))
    if e.get("llama_cpp_python"):
        bits.append(f"llama-cpp-python {e['llama_cpp_python']}, max_tokens {e.get('max_tokens')}")
    if e.get("partial"):
        bits.append(f"PARTIAL: {e['partial']}")
    if e.get("omp_wait_policy"):
        bits.append(f"OMP_WAIT_POLICY={e['omp_wait_policy']}")
    return f"- {r['name']}: " + ", ".join(bits) + f"; command: `{e.get('command')}`"


def ratio_table(results):
    """deg / baseline ratios for every (deg-like, baseline) pair; [] without a baseline."""
    base = [r for r in results if r.get("system") in ("baseline", "chat")]
    degs = [r for r in results if r.get("system") == "deg"]
    if not base or not degs:
        return []
    out = []
    for b in base:
        out += ["", f"Ratios against `{b['name']}` (deg / baseline; lower is better):", "",
                "| quantity | " + " | ".join(f"{d['name']}" for d in degs) + " | target |",
                "|---|" + "---|" * (len(degs) + 1)]
        for key, label, target in RATIOS:
            if b.get("system") != "baseline":
                target = None  # issue 6's targets are against constrained decoding only
            cells = []
            for d in degs:
                x, y = d["summary"].get(key), b["summary"].get(key)
                if x is None or not y:
                    cells.append("n/a")
                    continue
                q = x / y
                mark = "" if target is None else (" (met)" if q <= target else " (missed)")
                cells.append(f"{q:.3f}{mark}")
            out.append(f"| {label} | " + " | ".join(cells) + f" | {'<= ' + str(target) if target else ''} |")
        v = ["met" if d["summary"].get("validity") == 1.0 else "missed" for d in degs]
        out.append("| validity 100% | " + " | ".join(v) + " | = 1 |")
        for key, label in AHEAD:
            cells = []
            for d in degs:
                x, y = d["summary"].get(key), b["summary"].get(key)
                cells.append("n/a" if x is None or y is None else
                             f"{x - y:+.3f} ({'ahead' if x > y else 'not ahead'})")
            out.append(f"| {label}, deg - baseline | " + " | ".join(cells) + " | > 0 |")
    return out


def _short(v, n=70):
    t = json.dumps(v, ensure_ascii=False)
    return (t if len(t) <= n else t[:n - 3] + "...").replace("|", "\\|")


def _acc_cell(c):
    if not c:
        return "n/a"
    g = c.get("acc_as_given")
    return f"{c['acc']:.3f}" + (f" ({g:.3f})" if g is not None and abs(g - c["acc"]) > 1e-9 else "")


def field_table(results, examples=0):
    """Per-field accuracy, one column per system, + the majority-answer rate;
    then up to `examples` failures per field and system (gold vs prediction)."""
    keys = sorted({k for r in results for k in r["summary"].get("field_acc", {})})
    if not keys:
        return []
    out = ["", "Field accuracy per field (the whole field's value right; arrays as multisets; "
           "majority = always answering the field's most common gold value; in brackets: "
           "invalid responses' fields scored as given, where that differs):", "",
           "| field | n | " + " | ".join(r["name"] for r in results) + " | majority |",
           "|---|---|" + "---|" * (len(results) + 1)]
    for k in keys:
        cells = [r["summary"]["field_acc"].get(k) for r in results]
        first = next(c for c in cells if c)
        out.append(f"| {k} | {first['n']} | " + " | ".join(_acc_cell(c) for c in cells)
                   + f" | {first['majority']:.3f} |")
    if examples:
        for r in results:
            out += ["", f"Failures, {r['name']} (up to {examples} per field; record id: gold -> prediction):", ""]
            for k in keys:
                bad = [(p["id"], f) for p in r["per_record"] for f in p.get("fields") or []
                       if f["field"] == k and not f["correct"]]
                for rid, f in bad[:examples]:
                    out.append(f"- {k}, `{rid}`: {_short(f['gold'])} -> {_short(f['pred'])}"
                               + ("" if next(p for p in r["per_record"] if p["id"] == rid)["valid"]
                                  else " (invalid response)"))
    return out


def markdown(results, title="deg evaluation", notes=(), per_field=False, examples=0):
    """One table with a column per system (results: list of evaluate() dicts);
    per_field adds field_table(results, examples)."""
    n_bins = results[0]["summary"]["ece_bins"] if results else 10
    out = [f"# {title}", "",
           f"ECE: {n_bins} equal-width confidence bins over every leaf with a confidence "
           "(decide: the chosen outcome's probability, noul max(p, 1-p); extract: the "
           "span or null confidence). Leaf metrics are positional; array item EM aligns "
           "items order-insensitively; number/date EM compares parsed values; null = the "
           "leaf is null or absent. Latency: end-to-end wall time of one response; CPU time: "
           "the process's CPU seconds (all threads) for it. A "
           "system without probabilities (the baseline) has no ECE. Gold leaves per mode: "
           + ", ".join(f"{k.split('_')[0]} {results[0]['summary'].get(k)}" for k in
                       ("choice_n", "score_n", "noul_n", "span_n", "number_n", "date_n", "array_n")
                       if results) + ".", ""]
    out.append("| metric | " + " | ".join(r["name"] for r in results) + " |")
    out.append("|---|" + "---|" * len(results))
    for key, label, f in ROWS:
        out.append(f"| {label} | " + " | ".join(_fmt(r["summary"].get(key), f) for r in results) + " |")
    out += ratio_table(results)
    if per_field:
        out += field_table(results, examples)
    for r in results:
        for kind, bins in r["summary"]["reliability"].items():
            if not bins:
                continue
            out += ["", f"Reliability, {r['name']} {kind} (bin, n, mean confidence, accuracy):", "",
                    "| bin | n | conf | acc |", "|---|---|---|---|"]
            out += [f"| [{lo:.2f}, {hi:.2f}{']' if hi >= 1 else ')'} | {n} | {c:.3f} | {a:.3f} |"
                    for lo, hi, n, c, a in bins]
    for r in results:
        det = r.get("determinism")
        if det:
            out += ["", f"Determinism ({r['name']}, {det['records']} shortest records; bitwise "
                    f"equal value + meta): {det['repeat_equal']}/{det['records']} equal over "
                    f"{det['repeats']} repeats, {det['permutation_equal']}/{det['records']} keep every "
                    f"decide/extract outcome over {det['permutations']} field permutations, "
                    f"{det['split_equal']}/{det['records']} split (one schema per property) vs merged."]
    envs = [x for x in (_env_line(r) for r in results) if x]
    if envs:
        out += ["", "Runs:", ""] + envs
    out += [""] + [f"- {n}" for n in notes]
    return "\n".join(out) + "\n"


def plot_reliability(results, out_dir):
    """One PNG per (system, head kind) with confidences; [] and a reason when
    matplotlib is missing. Bars: accuracy per bin; the bin's sample count is
    written above it; the dashed diagonal is perfect calibration."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return [], "matplotlib is not installed (optional): no plots"
    paths = []
    for r in results:
        for kind, bins in r["summary"]["reliability"].items():
            if not bins:
                continue
            fig, ax = plt.subplots(figsize=(4, 4))
            ax.plot([0, 1], [0, 1], "k--", lw=1)
            xs = [(lo + hi) / 2 for lo, hi, *_ in bins]
            ax.bar(xs, [a for *_, a in bins], width=1.0 / r["summary"]["ece_bins"],
                   edgecolor="k", alpha=0.7, label="accuracy")
            ax.plot(xs, [c for *_, c, _ in bins], "r.", label="mean confidence")
            for x, (_, _, n, _, a) in zip(xs, bins):
                ax.text(x, min(a + 0.02, 0.95), str(n), ha="center", fontsize=6)
            ax.set(xlabel="confidence", ylabel="accuracy", xlim=(0, 1), ylim=(0, 1),
                   title=f"{r['name']} {kind}: ECE {r['summary'].get('ece_' + kind) or 0:.3f}, "
                   f"{r['summary'].get('ece_bins')} bins, n {r['summary'].get('ece_' + kind + '_n')}")
            ax.title.set_fontsize(8)
            ax.legend(fontsize=6, loc="upper left")
            p = os.path.join(out_dir, f"reliability_{r['name']}_{kind}.png")
            fig.savefig(p, dpi=72, bbox_inches="tight")
            plt.close(fig)
            paths.append(p)
    return paths, None
