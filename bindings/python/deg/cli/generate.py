"""deg generate: a completion or a chat answer, with prefill/decode speed."""
import json
import sys

from ..fetch import resolve_model_path
from ..model import WEIGHT_MODES, load_model
from ..runtime import runtime_info


def register(sub):
    p = sub.add_parser("generate", help="generate text from a prompt or a chat message",
                       description="Print a continuation of --prompt, or the assistant's "
                       "answer to --chat, then prefill and decode speeds (stderr).")
    p.add_argument("--model", help="GGUF file or HF model directory "
                   "(default: $DEG_MODEL, else the default model in the cache)")
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("--prompt", help="raw prompt text")
    src.add_argument("--chat", help="a user message, rendered in the model's chat layout")
    p.add_argument("--system", help="system message for --chat")
    p.add_argument("--weights", choices=sorted(WEIGHT_MODES),
                   help="how the weights are held (include/deg_runtime.h); default: "
                   "$DEG_WEIGHTS, else native. native-f32act answers as f32 up to "
                   "summation order at the file's memory")
    p.add_argument("--max-tokens", type=int, default=256)
    p.add_argument("--temperature", type=float, default=0.0, help="0 = greedy (default)")
    p.add_argument("--top-k", type=int, default=0, help="0 = off")
    p.add_argument("--top-p", type=float, default=1.0, help="1 = off")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--verbose", "-v", action="store_true",
                   help="print the runtime (BLIS kernel set, threads) and model info")
    p.set_defaults(func=run)


def run(args):
    path = resolve_model_path(args.model)
    if args.verbose:
        print(f"runtime: {json.dumps(runtime_info())}", file=sys.stderr)
    with load_model(path, weights=args.weights) as model:
        if args.verbose:
            i = model.info
            print(f"model: {path} ({i.arch}, {i.n_layer} layers, vocab {i.n_vocab}, "
                  f"{i.weight_bytes / 1e6:.1f} MB weights)", file=sys.stderr)
        if args.chat is not None:
            msgs = ([{"role": "system", "content": args.system}] if args.system else [])
            prompt = msgs + [{"role": "user", "content": args.chat}]
        else:
            prompt = args.prompt
        g = model.generate(prompt, max_tokens=args.max_tokens, temperature=args.temperature,
                           top_k=args.top_k, top_p=args.top_p, seed=args.seed)
    sys.stdout.write(g.text)
    sys.stdout.write("\n")
    sys.stdout.flush()
    s = g.stats
    print(f"prefill: {s.prompt_tokens} tokens, {s.prefill_tokens_per_second:.1f} tokens/s; "
          f"decode: {s.generated_tokens} tokens, {s.decode_tokens_per_second:.1f} tokens/s"
          f"{'' if s.stopped else ' (max tokens reached)'}", file=sys.stderr)
    return 0
