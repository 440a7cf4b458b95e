"""Set 4 of bench/devreal: a check set of package build and link metadata, written with
the rules of libdeg 0.25.0 (the key vocabulary, folded lists, names that say what a value
is) from other files, and measured once before and once after them: a Debian source
control file, a setuptools setup.cfg, pkg-config files, a pyproject.toml and a dpkg record.
Built by `python bench/devreal/build.py --set 4`; see build.py."""
import subprocess

from build import _read, _obj, S, I

PC = "/usr/lib/x86_64-linux-gnu/pkgconfig/"


def arr(t):
    return {"type": "array", "items": t}


def _dpkg(pkg):
    out = subprocess.run(["dpkg", "-s", pkg], capture_output=True, check=True).stdout
    return out.decode("utf-8")


DOCS = [
    ("control-ca-local", lambda: _read("/usr/share/doc/ca-certificates/examples/"
                                       "ca-certificates-local/debian/control"),
     _obj({"name": S, "maintainer_email": S, "dependencies": arr(S),
           "build_dependencies": arr(S), "architecture": S}),
     {"name": "ca-certificates-local", "maintainer_email": "root@localhost.localdomain",
      "dependencies": ["ca-certificates (>= 20130119)", "${misc:Depends}"],
      "build_dependencies": ["debhelper (>= 8.0.0)"], "architecture": "all"}),
    ("setup.cfg-flaskr", lambda: _read("/usr/share/doc/python3-flask/examples/setup.cfg"),
     _obj({"name": S, "version": S, "homepage": S, "license": S, "contact_email": S,
           "dependencies": arr(S)}),
     {"name": "flaskr", "version": "1.0.0", "homepage": "https://flask.palletsprojects.com/tutorial/",
      "license": "BSD-3-Clause", "contact_email": "contact@palletsprojects.com",
      "dependencies": ["Flask"]}),
    ("pc-fontconfig", lambda: _read(PC + "fontconfig.pc"),
     _obj({"name": S, "version": S, "summary": S, "dependencies": arr(S)}),
     {"name": "Fontconfig", "version": "2.14.1",
      "summary": "Font configuration and customization library",
      "dependencies": ["freetype2 >= 21.0.15"]}),
    ("pc-gnutls", lambda: _read(PC + "gnutls.pc"),
     _obj({"name": S, "version": S, "homepage": S, "private_dependencies": arr(S),
           "earliest_year": I, "author": S}),
     {"name": "GnuTLS", "version": "3.7.9", "homepage": "https://www.gnutls.org/",
      "private_dependencies": ["nettle", "hogweed", "libtasn1", "libidn2", "p11-kit-1"],
      "earliest_year": 2004, "author": "Simon Josefsson"}),
    ("pc-libgit2", lambda: _read(PC + "libgit2.pc"),
     _obj({"name": S, "version": S, "dependencies": arr(S)}),
     {"name": "libgit2", "version": "1.5.1", "dependencies": ["libpcre2-8", "zlib"]}),
    ("pyproject-example2", lambda: _read("/root/.pyenv/versions/3.13.0/lib/python3.13/test/"
                                         "test_importlib/metadata/data/sources/example2/"
                                         "pyproject.toml"),
     _obj({"name": S, "version": S, "build_dependencies": arr(S), "build_backend": S}),
     {"name": "example2", "version": "1.0.0", "build_dependencies": ["trampolim"],
      "build_backend": "trampolim"}),
    ("dpkg-libpng", lambda: _dpkg("libpng16-16"),
     _obj({"name": S, "source_package": S, "version": S, "homepage": S, "contact_email": S,
           "dependencies": arr(S)}),
     {"name": "libpng16-16", "source_package": "libpng1.6", "version": "1.6.39-2+deb12u4",
      "homepage": "http://libpng.org/pub/png/libpng.html",
      "contact_email": "libpng1.6@packages.debian.org",
      "dependencies": ["libc6 (>= 2.29)", "zlib1g (>= 1:1.2.11.dfsg)"]}),
]
