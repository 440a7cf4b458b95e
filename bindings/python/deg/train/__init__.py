"""deg.train: head training over frozen-backbone features (deg contract §12.3, §12.4).

Run `python -m deg.train --help`. Pieces: features (trace + cache, libdeg
deg_features_extract), data (records, bad-record checks, targets), engine (flat
head parameters, loss/gradient, logits, save), optim (AdamW, warmup + cosine),
calibrate (per-kind temperatures on val).
"""
from .cli import main  # noqa: F401
