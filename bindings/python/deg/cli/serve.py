"""deg serve: the HTTP server (fill, decision APIs, chat behind cartridges and fleets;
deg.server)."""


def register(sub):
    from ..server import add_arguments
    p = sub.add_parser("serve", help="serve fill, the decision APIs and chat over HTTP",
                       description="Serve POST /v1/fill, /v1/decisions, /v1/systemone, "
                       "/v1/chat/completions, GET /v1/models and /health with one model "
                       "in memory (deg contract §9, §9.1).")
    add_arguments(p)
    p.set_defaults(func=_run)


def _run(args):
    from ..server import run
    return run(args)
