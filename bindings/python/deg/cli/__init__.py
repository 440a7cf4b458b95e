"""The `deg` command line. Subcommands live in one module each and register
themselves in main.COMMANDS; add new ones (fill, cartridge ...) there."""
from .main import main  # noqa: F401
