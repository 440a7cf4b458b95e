"""`deg` entry point: argparse with one subparser per command module.

A command module provides register(subparsers) which adds its parser and
sets `func` (args -> exit code) via set_defaults.
"""
import argparse
import importlib
import sys

from ..errors import DegError

#: Command modules in deg.cli, in help order. Later issues append here.
COMMANDS = ["generate", "info", "fetch_model", "cartridge", "fleet", "fill", "serve"]

#: The environment variable every command's model loading reads (deg --help).
ENV_HELP = """environment:
  DEG_WEIGHTS   how model weights are held (include/deg_runtime.h):
                native         (the default) the GGUF's quantized blocks
                               resident, 8-bit activations (llama.cpp's
                               numerics, the fast mode)
                native-f32act  the same blocks, f32 activations: f32 logits
                               up to summation order
                f32            dequantized to f32 at load (transformers'
                               numerics, ~4 bytes a weight)
                deg generate --weights MODE overrides it for one run."""


def build_parser():
    from ..runtime import version
    parser = argparse.ArgumentParser(
        prog="deg", description="deg: small transformer LMs on the CPU (libdeg).",
        epilog=ENV_HELP, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action="version", version=f"deg {version()}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    for name in COMMANDS:
        importlib.import_module(f"{__package__}.{name}").register(sub)
    return parser


def main(argv=None):
    parser = build_parser()
    argv = sys.argv[1:] if argv is None else list(argv)
    # argparse would only say "COMMAND is required" here, hiding the real mistake.
    if argv and argv[0].startswith("-") and argv[0] not in ("-h", "--help", "--version"):
        parser.error(f"unknown option {argv[0]!r} before the COMMAND; command options go "
                     "after it (deg COMMAND --help lists them)")
    args = parser.parse_args(argv)
    try:
        return args.func(args) or 0
    except DegError as e:
        print(f"deg {args.command}: error: {e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
