"""Set 11 of bench/devreal: a check set for set 10's rule (nullable fields of documents of
keys: dpkg status paragraphs, pkg-config files, npm package.json files), chosen before
libdeg 0.27.0 was measured on it, measured once before and once after (36 of 41 with
both); no rule was written reading it. Gold as set 10's. Built by `python bench/devreal/build.py --set 11`."""
from set10 import dpkg_doc, npm_doc, pc_doc

DOCS = [dpkg_doc(p) for p in ("debconf", "libxss1", "libsasl2-modules", "libdatrie1", "gnupg",
                              "libsensors5")]
DOCS += [pc_doc(m) for m in ("glu", "expat", "ice", "libpng")]
DOCS += [npm_doc(p) for p in ("agent-base", "cmd-shim", "ci-info", "color-name", "cross-spawn")]
