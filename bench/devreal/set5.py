"""Set 5 of bench/devreal: a development set of copyright notices, licences and
setuptools calls: C headers opening with several notices ("Copyright (c) 1997-2000 ...",
"Portions Copyright ... 2008", an SPDX line) and setup.py files of this machine. The rules
of libdeg 0.26.0 (the end a number's name asks for, licence names in plain spans, notice
forms, comment marks in spans) were written while reading its failures, so it is no check
of them (set 6 is). Built by `python bench/devreal/build.py --set 5`; see build.py."""
from build import _read, _obj, S, I

G = "/usr/lib/google-cloud-sdk/platform/gsutil/third_party/"


def arr(t):
    return {"type": "array", "items": t}


SETUP = _obj({"name": S, "version": S, "license": S, "contact_email": S, "homepage": S,
              "dependencies": arr(S), "earliest_year": I})
YEARS = {"earliest_year": I, "latest_year": I}

DOCS = [
    ("setup.py-rsa", lambda: _read(G + "rsa/setup.py"), SETUP,
     {"name": "rsa", "version": "4.5", "license": "ASL 2", "contact_email": "sybren@stuvel.eu",
      "homepage": "https://stuvel.eu/rsa", "dependencies": ["pyasn1 >= 0.1.3"],
      "earliest_year": 2011}),
    ("setup.py-retry-decorator", lambda: _read(G + "retry-decorator/setup.py"),
     _obj({"name": S, "license": S, "contact_email": S, "homepage": S, "dependencies": arr(S)}),
     {"name": "retry_decorator", "license": "MIT", "contact_email": "pn.appdev@gmail.com",
      "homepage": "https://github.com/pnpnpn/retry-decorator", "dependencies": []}),
    ("setup.py-httplib2", lambda: _read(G + "httplib2/setup.py"),
     _obj({"name": S, "version": S, "license": S, "contact_email": S, "homepage": S}),
     {"name": "httplib2", "version": "0.20.4", "license": "MIT",
      "contact_email": "joe@bitworking.org", "homepage": "https://github.com/httplib2/httplib2"}),
    ("setup.py-crcmod", lambda: _read(G + "crcmod/setup.py"),
     _obj({"name": S, "version": S, "license": S, "contact_email": S, "homepage": S,
           "source_url": S}),
     {"name": "crcmod", "version": "1.7", "license": "MIT", "contact_email": "rlbuvel@gmail.com",
      "homepage": "http://crcmod.sourceforge.net/",
      "source_url": "http://sourceforge.net/projects/crcmod"}),
    ("expat.h", lambda: _read("/usr/include/expat.h", 0, 60),
     _obj({**YEARS, "license": S, "first_copyright_holder": S}),
     {"earliest_year": 1997, "latest_year": 2022, "license": "MIT",
      "first_copyright_holder": "Thai Open Source Software Center Ltd"}),
    ("zlib.h", lambda: _read("/usr/include/zlib.h", 0, 45),
     _obj({"name": S, "version": S, "earliest_year": I, "contact_email": S}),
     {"name": "zlib", "version": "1.2.13", "earliest_year": 1995, "contact_email": "jloup@gzip.org"}),
    ("jansson.h", lambda: _read("/usr/include/jansson.h", 0, 30),
     _obj({"earliest_year": I, "license": S, "contact_email": S, "copyright_holder": S}),
     {"earliest_year": 2009, "license": "MIT", "contact_email": "petri@digip.org",
      "copyright_holder": "Petri Lehtinen"}),
    ("png.h", lambda: _read("/usr/include/png.h", 0, 60),
     _obj({"version": S, **YEARS, "license": S}),
     {"version": "1.6.39", "earliest_year": 1995, "latest_year": 2022,
      "license": "PNG Reference Library License version 2"}),
    ("nl80211.h", lambda: _read("/usr/include/linux/nl80211.h", 0, 30),
     _obj({**YEARS, "contact_email": S}),
     {"earliest_year": 2006, "latest_year": 2022, "contact_email": "johannes@sipsolutions.net"}),
    ("tcl.h", lambda: _read("/usr/include/tcl/tcl.h", 0, 20), _obj({**YEARS, "license_file": S}),
     {"earliest_year": 1987, "latest_year": 2002, "license_file": "license.terms"}),
    ("verbs.h", lambda: _read("/usr/include/infiniband/verbs.h", 0, 35), _obj(YEARS),
     {"earliest_year": 2004, "latest_year": 2020}),
    ("sonypi.h", lambda: _read("/usr/include/linux/sonypi.h", 0, 20), _obj({**YEARS, "license": S}),
     {"earliest_year": 2000, "latest_year": 2005, "license": "GPL-2.0+ WITH Linux-syscall-note"}),
    ("ethtool.h", lambda: _read("/usr/include/linux/ethtool.h", 0, 14),
     _obj({**YEARS, "license": S}),
     {"earliest_year": 1998, "latest_year": 2008, "license": "GPL-2.0 WITH Linux-syscall-note"}),
]
