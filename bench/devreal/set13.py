"""Set 13 of bench/devreal: a check set for set 12's rules (licences outside a choice's
options, twin options, fields located by a quoted paragraph line), chosen before libdeg
0.28.0 was measured on it and measured once with 0.27.0 and once with 0.28.0; no rule was
written reading it. Gold as set 12's. Built by `python bench/devreal/build.py --set 13`."""
from set12 import dpkg_window, npm_doc, spdx_doc

DOCS = [npm_doc(p) for p in ("package-json-from-dist", "path-scurry", "http-cache-semantics",
                             "exponential-backoff", "normalize-package-data", "sprintf-js")]
DOCS += [spdx_doc(p) for p in ("/usr/include/linux/vbox_err.h", "/usr/include/tcl8.6/tclTomMath.h",
                               "/usr/include/linux/can.h",
                               "/usr/include/libnl3/netlink/netfilter/nfnl.h")]
DOCS += [dpkg_window(p) for p in ("binutils-x86-64-linux-gnu", "libatspi2.0-0", "libmunge2",
                                  "libxmlb2")]
