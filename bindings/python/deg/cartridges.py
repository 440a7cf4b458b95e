"""Deprecated alias of deg.selfstudy (the module's name before issue 14).

`import deg.cartridges` / `from deg import cartridges` give the deg.selfstudy
module itself (so its functions, classes and monkeypatches are shared) and
warn once per importing site with a DeprecationWarning."""
import sys
import warnings

from . import selfstudy as _selfstudy

warnings.warn("deg.cartridges is deprecated: use deg.selfstudy (same API)", DeprecationWarning,
              stacklevel=2)
sys.modules[__name__] = _selfstudy
