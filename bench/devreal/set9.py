"""Set 9 of bench/devreal: a check set of lists of names (set8.py's kinds: dpkg
paragraphs, pip requirements files, pkg-config files), chosen before libdeg 0.27.0 was
measured on it: 3 of 15 fields with 0.26.0, 11 with the names, requirement-line and glob
rules. Two rules were written after reading its failures (package names split at blanks
under a dependency key, known from set 4's libgit2; an unwritten dependency array is
empty, seen on set 8 too), which made it 15: it is no longer unseen for those two.
Gold as set 8's (independent parsers). Built by `python bench/devreal/build.py --set 9`."""
from set8 import GSUTIL, dpkg_doc, pc_doc, req_doc

DOCS = [
    dpkg_doc("libegl-dev", {"dependencies": ("Depends", "names of the required packages")}),
    dpkg_doc("libalgorithm-merge-perl", {"dependencies": ("Depends", "names of the packages it depends on")}),
    dpkg_doc("libfile-fcntllock-perl", {"depends": ("Depends", "dependency names (Depends)")}),
    dpkg_doc("dconf-service", {"dependencies": ("Depends", "names of the required packages (Depends)"),
                               "recommends": ("Recommends", "names of the recommended packages")}),
    dpkg_doc("libasound2-data", {"dependencies": ("Depends", "names of the required packages (Depends)"),
                                 "recommends": ("Recommends", "names of the recommended packages")}),
    req_doc("requirements-httplib2-test", GSUTIL + "third_party/httplib2/requirements-test.txt",
            "test_dependencies", "names of the packages the tests need"),
    req_doc("requirements-gcs-oauth2-boto-plugin",
            GSUTIL + "third_party/gcs-oauth2-boto-plugin/requirements.txt", "dependencies",
            "names of the required packages"),
    req_doc("requirements-mock", GSUTIL + "third_party/mock/requirements.txt", "requirements",
            "package names"),
    req_doc("requirements-python-build", "/root/.pyenv/plugins/python-build/scripts/requirements.txt",
            "dependencies", "names of the required packages"),
    req_doc("requirements-urllib3-docs", GSUTIL + "third_party/urllib3/docs/requirements.txt",
            "docs_dependencies", "names of the packages the docs need"),
    pc_doc("libnsl", {"required_packages": (False, "names of the packages it requires")}),
    pc_doc("libssh2", {"private_dependencies": (True, "names of the private requirements (Requires.private)")}),
    pc_doc("libexslt", {"dependencies": (False, "names of the required packages")}),
]
