"""Markdown report and reliability diagrams of evaluate() results.

Plots need matplotlib (optional: `pip install matplotlib`); without it the
report says so and keeps the reliability tables.
"""
import os

ROWS = [
    ("records", "records", "{:.0f}"),
    ("validity", "validity rate", "{:.3f}"),
    ("choice_em", "choice exact match", "{:.3f}"),
    ("score_mae", "score MAE", "{:.3f}"),
    ("score_em", "score exact match", "{:.3f}"),
    ("noul_acc", "noul accuracy", "{:.3f}"),
    ("span_em", "span exact match", "{:.3f}"),
    ("span_f1", "span token F1", "{:.3f}"),
    ("number_em", "number EM (parsed)", "{:.3f}"),
    ("date_em", "date / date-time EM (parsed)", "{:.3f}"),
    ("null_precision", "null precision", "{:.3f}"),
    ("null_recall", "null recall", "{:.3f}"),
    ("array_count_acc", "array count accuracy", "{:.3f}"),
    ("array_item_em_aligned", "array item EM (aligned)", "{:.3f}"),
    ("ece_decide", "ECE decide", "{:.3f}"),
    ("ece_extract", "ECE extract confidence", "{:.3f}"),
    ("prompt_tokens_mean", "prompt tokens / response", "{:.1f}"),
    ("generated_tokens_mean", "generated tokens / response", "{:.1f}"),
    ("latency_s_mean", "latency mean (s)", "{:.3f}"),
    ("latency_s_p50", "latency p50 (s)", "{:.3f}"),
]


def _fmt(v, f):
    return "n/a" if v is None else f.format(v)


def markdown(results, title="deg evaluation", notes=()):
    """One table with a column per system (results: list of evaluate() dicts)."""
    n_bins = results[0]["summary"]["ece_bins"] if results else 10
    out = [f"# {title}", "",
           f"ECE: {n_bins} equal-width confidence bins. Leaf metrics are positional; "
           "array item EM aligns items order-insensitively. Counts per mode: "
           + ", ".join(f"{k.split('_')[0]} {results[0]['summary'].get(k)}" for k in
                       ("choice_n", "score_n", "noul_n", "span_n", "number_n", "date_n", "array_n")
                       if results) + ".", ""]
    out.append("| metric | " + " | ".join(r["name"] for r in results) + " |")
    out.append("|---|" + "---|" * len(results))
    for key, label, f in ROWS:
        out.append(f"| {label} | " + " | ".join(_fmt(r["summary"].get(key), f) for r in results) + " |")
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
            out += ["", f"Determinism ({r['name']}, {det['records']} records): "
                    f"{det['repeat_equal']} equal over {det['repeats']} repeats, "
                    f"{det['permutation_equal']} over {det['permutations']} field permutations, "
                    f"{det['split_equal']} split vs merged."]
    out += [""] + [f"- {n}" for n in notes]
    return "\n".join(out) + "\n"


def plot_reliability(results, out_dir):
    """One PNG per (system, head kind); [] and a reason when matplotlib is missing."""
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
            ax.bar([(lo + hi) / 2 for lo, hi, *_ in bins], [a for *_, a in bins],
                   width=1.0 / r["summary"]["ece_bins"], edgecolor="k", alpha=0.7)
            ax.set(xlabel="confidence", ylabel="accuracy", xlim=(0, 1), ylim=(0, 1),
                   title=f"{r['name']} {kind} (ECE {r['summary'].get('ece_' + kind) or 0:.3f})")
            p = os.path.join(out_dir, f"reliability_{r['name']}_{kind}.png")
            fig.savefig(p, dpi=80, bbox_inches="tight")
            plt.close(fig)
            paths.append(p)
    return paths, None
