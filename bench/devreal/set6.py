"""Set 6 of bench/devreal: a check set of copyright notices, licences and setuptools
calls, written (files chosen, gold by hand) after the rules of libdeg 0.26.0 and measured
once before and once after them: C headers opening with several notices or an SPDX line,
and setup.py files of this machine (one whose install_requires is a variable defined
above the call). Built by `python bench/devreal/build.py --set 6`; see build.py."""
from build import _read, _obj, S, I

G = "/usr/lib/google-cloud-sdk/platform/gsutil/third_party/"


def arr(t):
    return {"type": "array", "items": t}


YEARS = {"earliest_year": I, "latest_year": I}

DOCS = [
    ("tk.h", lambda: _read("/usr/include/tcl/tk.h", 0, 20), _obj({**YEARS, "license_file": S}),
     {"earliest_year": 1989, "latest_year": 2000, "license_file": "license.terms"}),
    ("pngconf.h", lambda: _read("/usr/include/pngconf.h", 0, 20), _obj({**YEARS, "version": S}),
     {"earliest_year": 1995, "latest_year": 2022, "version": "1.6.39"}),
    ("expat_external.h", lambda: _read("/usr/include/expat_external.h", 0, 45),
     _obj({**YEARS, "license": S, "contact_email": S}),
     {"earliest_year": 1997, "latest_year": 2019, "license": "MIT",
      "contact_email": "coopercc@users.sourceforge.net"}),
    ("nn.h", lambda: _read("/usr/include/nanomsg/nn.h", 0, 25),
     _obj({**YEARS, "contact_email": S}),
     {"earliest_year": 2012, "latest_year": 2017, "contact_email": "garrett@damore.org"}),
    ("irdma-abi.h", lambda: _read("/usr/include/rdma/irdma-abi.h", 0, 12),
     _obj({**YEARS, "license": S}),
     {"earliest_year": 2005, "latest_year": 2021,
      "license": "(GPL-2.0 WITH Linux-syscall-note) OR Linux-OpenIB"}),
    ("setup.py-six", lambda: _read(G + "six/setup.py"),
     _obj({"name": S, "license": S, "contact_email": S, "homepage": S, **YEARS}),
     {"name": "six", "license": "MIT", "contact_email": "benjamin@python.org",
      "homepage": "https://github.com/benjaminp/six", "earliest_year": 2010, "latest_year": 2020}),
    ("setup.py-funcsigs", lambda: _read(G + "funcsigs/setup.py"),
     _obj({"name": S, "license": S, "contact_email": S, "homepage": S}),
     {"name": "funcsigs", "license": "ASL", "contact_email": "testing-in-python@lists.idyll.org",
      "homepage": "http://funcsigs.readthedocs.org"}),
    ("setup.py-gcs-oauth2-boto-plugin", lambda: _read(G + "gcs-oauth2-boto-plugin/setup.py"),
     _obj({"name": S, "version": S, "license": S, "contact_email": S, "dependencies": arr(S),
           "earliest_year": I}),
     {"name": "gcs-oauth2-boto-plugin", "version": "3.2", "license": "Apache 2.0",
      "contact_email": "gs-team@google.com",
      "dependencies": ["rsa==4.7.2", "boto>=2.29.1", "google-reauth>=0.1.0", "httplib2>=0.18",
                       "oauth2client>=2.2.0", "pyOpenSSL>=0.13", "retry_decorator>=1.0.0",
                       "six>=1.12.0", "google-auth==2.17.0", "google-auth-httplib2>=0.2.0"],
      "earliest_year": 2014}),
    ("setup.py-apitools", lambda: _read(G + "apitools/setup.py"),
     _obj({"name": S, "license": S, "contact_email": S, "homepage": S, "earliest_year": I}),
     {"name": "google-apitools", "license": "Apache 2.0", "contact_email": "craigcitro@google.com",
      "homepage": "http://github.com/google/apitools", "earliest_year": 2013}),
    ("setup.py-lit", lambda: _read("/usr/lib/llvm-14/build/utils/lit/setup.py"),
     _obj({"name": S, "license": S, "homepage": S}),
     {"name": "lit", "license": "Apache-2.0 with LLVM exception", "homepage": "http://llvm.org"}),
]
