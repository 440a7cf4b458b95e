"""deg info: library version, runtime (BLIS kernel set, threads), default model."""
import json

from ..fetch import FETCH_HINT, cache_dir, default_model_path, resolve_model_path
from ..runtime import HEADER_VERSION, runtime_info, version


def register(sub):
    p = sub.add_parser("info", help="show the library, runtime and model information")
    p.add_argument("--model", help="also load this model (or the default one with "
                   "--model default) and print its hyper-parameters")
    p.add_argument("--json", action="store_true", help="one JSON object")
    p.set_defaults(func=run)


def run(args):
    out = {"version": version(), "header_version": HEADER_VERSION,
           "runtime": runtime_info(), "cache_dir": str(cache_dir())}
    dm = default_model_path(check=False)
    out["default_model"] = str(dm) if dm.is_file() else None
    if args.model:
        from dataclasses import asdict
        from ..model import load_model
        path = resolve_model_path(None if args.model == "default" else args.model)
        with load_model(path) as m:
            out["model"] = {"path": str(path), **asdict(m.info)}
    if args.json:
        print(json.dumps(out, indent=2))
        return 0
    print(f"deg {out['version']} (header {out['header_version']})")
    for k, v in out["runtime"].items():
        print(f"  {k}: {v}")
    print(f"cache: {out['cache_dir']}")
    print(f"default model: {out['default_model'] or 'not fetched (' + FETCH_HINT + ')'}")
    if "model" in out:
        print("model:")
        for k, v in out["model"].items():
            print(f"  {k}: {v}")
    return 0
