"""Write "micro-llama": tests/goldens/tiny-llama cut to 1 layer and 1 attention
head (head_dim 16, hidden 64), for bench_fill's 100k-token memory-bound run
(attention is O(L^2): 1 head x 1 layer makes a 100k-token prefill 8x cheaper
than tiny-llama's 2 x 4 while the bound's terms stay the same).

    python bench/make_micro_model.py OUT_DIR      (needs numpy + safetensors)
    build/bench/bench_fill OUT_DIR --sizes 100000
"""
import json
import shutil
import sys
from pathlib import Path

from safetensors.numpy import load_file, save_file

SRC = Path(__file__).resolve().parents[1] / "tests" / "goldens" / "tiny-llama"


def main(out):
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    cfg = json.loads((SRC / "config.json").read_text())
    D = cfg["head_dim"]
    cfg.update(num_hidden_layers=1, num_attention_heads=1, num_key_value_heads=1)
    w = load_file(SRC / "model.safetensors")
    keep = {}
    for k, v in w.items():
        if k.startswith("model.layers.") and not k.startswith("model.layers.0."):
            continue
        if k.endswith(("q_proj.weight", "k_proj.weight", "v_proj.weight")):
            v = v[:D].copy()  # the first head
        elif k.endswith("o_proj.weight"):
            v = v[:, :D].copy()
        keep[k] = v
    save_file(keep, out / "model.safetensors")
    (out / "config.json").write_text(json.dumps(cfg, indent=2))
    for f in ("tokenizer.json", "tokenizer_config.json"):
        shutil.copy(SRC / f, out / f)


if __name__ == "__main__":
    main(sys.argv[1])
