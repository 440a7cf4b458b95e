"""deg fill: fill a JSON Schema from a context with a deg checkpoint (§8 response)."""
import json
import sys
from pathlib import Path

from ..errors import FillError, LimitError, RequestError, SchemaError
from ..limits import add_limit_arguments, flag_hint, limits_from_args


def register(sub):
    p = sub.add_parser("fill", help="fill a JSON Schema from a context (deg checkpoint)",
                       description="Print the §8 response JSON {model, value, meta, usage, "
                       "plan}. Problems with the request or schema are listed as "
                       "{loc, msg} on stderr (exit 2); a FillError exits 3, a work limit "
                       "(LimitError: --deadline-ms, --max-fields, --max-fork-tokens) 4; a "
                       "checkpoint or backbone that cannot be loaded (missing, corrupt, "
                       "another backbone) exits 1, as every deg command's load errors.")
    p.add_argument("--ckpt", help="checkpoint directory (default: the shipped checkpoint, "
                   "DEG_CHECKPOINT or deg.fill module's default_checkpoint_path()) (deg.json + "
                   "heads.safetensors)")
    p.add_argument("--context", required=True, help="context file ('-' = stdin); "
                   "with --json-context it holds a JSON value")
    p.add_argument("--schema", required=True, help="JSON Schema file")
    p.add_argument("--json-context", action="store_true",
                   help="the context file is JSON (object/array/string), rendered as §7.1")
    p.add_argument("--options", help="options as JSON text or @file (e.g. "
                   "'{\"max_new_tokens\": 64}')")
    p.add_argument("--model-path", help="backbone file/directory (default: as recorded "
                   "in the checkpoint)")
    p.add_argument("--create-random", metavar="MODEL",
                   help="first write a fresh random-head checkpoint for MODEL (a path, or "
                   "'default' = the default model) to --ckpt")
    p.add_argument("--seed", type=int, default=0, help="head seed for --create-random")
    p.add_argument("--indent", type=int, default=None)
    add_limit_arguments(p, "the fill")
    p.set_defaults(func=run)


def _read(path, what):
    if path == "-":
        return sys.stdin.read()
    try:
        return Path(path).read_text(encoding="utf-8")
    except UnicodeDecodeError as e:
        raise ValueError(f"{what} {path}: not UTF-8 text (byte {e.start})") from None
    except OSError as e:
        raise ValueError(f"{what} {path}: {e.strerror or e}") from None


def _json(text, what):
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        raise ValueError(f"{what} is not valid JSON: {e.msg} at line {e.lineno} "
                         f"column {e.colno}") from None


def run(args):
    from ..fill import create_random_checkpoint, fill, load
    if args.create_random and not args.ckpt:
        print("deg fill: --create-random needs --ckpt (where to write it)", file=sys.stderr)
        return 2
    if args.create_random:
        backbone = args.create_random
        if backbone == "default":
            from ..fetch import default_model_path
            backbone = default_model_path()
        create_random_checkpoint(backbone, args.ckpt, seed=args.seed)
    limits = limits_from_args(args, "deg fill")
    try:
        context = _read(args.context, "--context")
        if args.json_context:
            context = _json(context, "--context")
        schema = _json(_read(args.schema, "--schema"), "--schema")
        options = None
        if args.options:
            options = _json(_read(args.options[1:], "--options") if args.options.startswith("@")
                            else args.options, "--options")
    except (OSError, UnicodeDecodeError, ValueError) as e:
        print(f"deg fill: {e}", file=sys.stderr)
        return 2
    with load(args.ckpt, model_path=args.model_path) as ck:
        try:
            resp = fill(context, schema, model=ck, options=options, limits=limits)
        except (SchemaError, RequestError) as e:
            print(f"deg fill: {type(e).__name__}: {e}", file=sys.stderr)
            for err in getattr(e, "errors", None) or []:
                print(json.dumps(err, ensure_ascii=False), file=sys.stderr)
            return 2
        except FillError as e:
            print(f"deg fill: FillError: {e}", file=sys.stderr)
            return 3
        except LimitError as e:  # the flags, not the library call, lift it here
            msg = flag_hint(str(e), "run deg fill with")
            print(f"deg fill: LimitError: {msg}", file=sys.stderr)
            return 4
    print(json.dumps(resp, ensure_ascii=False, indent=args.indent))
    return 0
