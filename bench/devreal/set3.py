"""Set 3 of bench/devreal: a check set written after the rules of libdeg 0.24.0 and
measured once with them, never tuned on: JAR manifests (MANIFEST.MF), a Maven POM with
developers, package.json and Cargo.toml manifests, C headers' licence comments and a
README. Built by `python bench/devreal/build.py --set 3`; see build.py."""
from build import _read, _obj, S, I, B as BO, URI

M2 = "/root/.m2/repository/"
NM = "/usr/lib/node_modules/npm/node_modules/"


def arr(t):
    return {"type": "array", "items": t}


def _jar(path):
    import subprocess
    out = subprocess.run(["unzip", "-p", M2 + path, "META-INF/MANIFEST.MF"], capture_output=True,
                         check=True).stdout.decode("utf-8")
    return out.replace("\r\n", "\n")


LIC = {"enum": ["MIT", "ISC", "Apache-2.0", "BSD-2-Clause", "BSD-3-Clause", "0BSD",
                "GPL-2.0-or-later", "LGPL-2.1-or-later", "EPL-2.0"]}
DOCS = [
    ("manifest-asm", lambda: _jar("org/ow2/asm/asm/9.6/asm-9.6.jar"),
     _obj({"version": S, "license": LIC, "homepage": URI, "symbolic_name": S,
           "required_java": S}),
     {"version": "9.6", "license": "BSD-3-Clause", "homepage": "http://asm.ow2.org",
      "symbolic_name": "org.objectweb.asm", "required_java": "J2SE-1.5"}),
    ("manifest-xz", lambda: _jar("org/tukaani/xz/1.12/xz-1.12.jar"),
     _obj({"name": S, "version": S, "license": LIC, "project_url": URI, "sealed": BO,
           "copyright_holder": S}),
     {"name": "XZ data compression", "version": "1.12", "license": "0BSD",
      "project_url": "https://tukaani.org/xz/java.html", "sealed": True,
      "copyright_holder": "The XZ for Java authors and contributors"}),
    ("manifest-inject", lambda: _jar("jakarta/inject/jakarta.inject-api/2.0.1/"
                                     "jakarta.inject-api-2.0.1.jar"),
     _obj({"name": S, "vendor": S, "version": S, "license": LIC, "built_by": S}),
     {"name": "Jakarta Dependency Injection", "vendor": "Eclipse Foundation",
      "version": "2.0.1", "license": "Apache-2.0", "built_by": "jenkins"}),
    ("pom-inject", lambda: _read(M2 + "jakarta/inject/jakarta.inject-api/2.0.1/"
                                 "jakarta.inject-api-2.0.1.pom", 0, 72),
     _obj({"group_id": S, "artifact_id": S, "version": S, "homepage": URI, "license": LIC,
           "developers": arr(S), "parent_version": S}),
     {"group_id": "jakarta.inject", "artifact_id": "jakarta.inject-api", "version": "2.0.1",
      "homepage": "https://github.com/eclipse-ee4j/injection-api", "license": "Apache-2.0",
      "developers": ["Antoine Sabot-Durand", "Martin Kouba", "Tomas Remes", "Matej Novotny"],
      "parent_version": "1.0.6"}),
    ("npm-semver", lambda: _read(NM + "semver/package.json"),
     _obj({"name": S, "version": S, "license": LIC, "dev_dependencies": arr(S),
           "has_dependencies": BO, "repository_url": URI}),
     {"name": "semver", "version": "7.6.2", "license": "ISC",
      "dev_dependencies": ["@npmcli/eslint-config", "@npmcli/template-oss", "benchmark", "tap"],
      "has_dependencies": False, "repository_url": "git+https://github.com/npm/node-semver.git"}),
    ("cargo-error-codes", lambda: _read("/root/.rustup/toolchains/stable-x86_64-unknown-linux-gnu/"
                                        "share/doc/rust/html/error_codes/Cargo.toml"),
     _obj({"name": S, "version": S, "edition": S, "dependencies": arr(S)}),
     {"name": "error_index_generator", "version": "0.0.0", "edition": "2021",
      "dependencies": ["mdbook-driver", "mdbook-summary"]}),
    ("expat.h", lambda: _read("/usr/include/expat.h", 0, 40),
     _obj({"project": S, "license": LIC, "earliest_year": I, "maintainer_email": S}),
     {"project": "XML parser", "license": "MIT", "earliest_year": 1997,
      "maintainer_email": "sebastian@pipping.org"}),
    ("bzlib.h", lambda: _read("/usr/include/bzlib.h", 0, 22),
     _obj({"library": S, "version": S, "author": S, "author_email": S, "copyright_years": S}),
     {"library": "bzip2/libbzip2", "version": "1.0.8", "author": "Julian Seward",
      "author_email": "jseward@acm.org", "copyright_years": "1996-2019"}),
    ("argp.h", lambda: _read("/usr/include/argp.h", 0, 22),
     _obj({"license": LIC, "copyright_holder": S, "written_by": S, "part_of": S}),
     {"license": "LGPL-2.1-or-later", "copyright_holder": "Free Software Foundation, Inc.",
      "written_by": "Miles Bader", "part_of": "the GNU C Library"}),
]
