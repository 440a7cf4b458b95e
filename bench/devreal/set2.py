"""Set 2 of bench/devreal: package and project metadata in layouts datagen lacks (Maven
POMs, raw package.json, a C header's licence comment, a LICENSE file, an AUTHORS file, a
.desktop file, an INI-like configuration, a NEWS file), each with a short schema and gold
written by hand. Built by `python bench/devreal/build.py --set 2`; see build.py."""
from build import _read, _obj, S, I, B as BO, URI, EMAIL

M2 = "/root/.m2/repository/"
NM = "/usr/lib/node_modules/npm/node_modules/"


def arr(t):
    return {"type": "array", "items": t}


LIC = {"enum": ["MIT", "ISC", "Apache-2.0", "BSD-3-Clause", "GPL-3.0-or-later",
                 "LGPL-2.1-or-later", "Zlib"]}
DATE = {"type": "string", "format": "date"}
DOCS = [
 ("pom-jna", lambda: _read(M2 + "net/java/dev/jna/jna/5.13.0/jna-5.13.0.pom"),
  _obj({"name": S, "version": S, "homepage": URI, "licenses": arr(S), "developer_email": EMAIL, "several_licenses": BO}),
  {"name": "Java Native Access", "version": "5.13.0", "homepage": "https://github.com/java-native-access/jna",
   "licenses": ["LGPL-2.1-or-later", "Apache-2.0"], "developer_email": "mblaesing@doppel-helix.eu", "several_licenses": True}),
 ("pom-maven-artifact", lambda: _read(M2 + "org/apache/maven/maven-artifact/2.0.5/maven-artifact-2.0.5.pom"),
  _obj({"artifact_id": S, "name": S, "version": S, "group_id": S, "dependencies": arr(S)}),
  {"artifact_id": "maven-artifact", "name": "Maven Artifact", "version": "2.0.5", "group_id": "org.apache.maven",
   "dependencies": ["plexus-utils", "plexus-container-default"]}),
 ("pom-slf4j-nop", lambda: _read(M2 + "org/slf4j/slf4j-nop/1.7.36/slf4j-nop-1.7.36.pom"),
  _obj({"name": S, "homepage": URI, "dependencies": arr(S), "has_parent": BO, "version": S}),
  {"name": "SLF4J NOP Binding", "homepage": "http://www.slf4j.org", "dependencies": ["slf4j-api"], "has_parent": True, "version": "1.7.36"}),
 ("npm-debug", lambda: _read(NM + "debug/package.json"),
  _obj({"name": S, "version": S, "license": LIC, "dependencies": arr(S), "repository_url": URI,
        "contributor_emails": arr(EMAIL), "has_dev_dependencies": BO}),
  {"name": "debug", "version": "4.3.5", "license": "MIT", "dependencies": ["ms"], "repository_url": "git://github.com/debug-js/debug.git",
   "contributor_emails": ["tj@vision-media.ca", "nathan@tootallnate.net", "rhyneandrew@gmail.com"], "has_dev_dependencies": True}),
 ("zlib.h", lambda: _read("/usr/include/zlib.h", 0, 30),
  _obj({"library": S, "version": S, "earliest_year": I, "author_emails": arr(EMAIL), "release_date": DATE}),
  {"library": "zlib", "version": "1.2.13", "earliest_year": 1995, "author_emails": ["jloup@gzip.org", "madler@alumni.caltech.edu"],
   "release_date": "2022-10-13"}),
 ("license-pyenv-virtualenv", lambda: _read("/root/.pyenv/plugins/pyenv-virtualenv/LICENSE"),
  _obj({"copyright_year": I, "holder": S, "license": LIC}),
  {"copyright_year": 2025, "holder": "Yamashita, Yuu", "license": "MIT"}),
 ("authors-cscope", lambda: _read("/usr/share/doc/cscope/AUTHORS", 0, 12),
  _obj({"creator": S, "maintainer": S, "maintainer_email": EMAIL}),
  {"creator": "Joe Steffen", "maintainer": "Hans-Bernhard Broeker", "maintainer_email": "broeker@physik.rwth-aachen.de"}),
 ("vim.desktop", lambda: _read("/usr/share/applications/vim.desktop"),
  _obj({"name": S, "generic_name": S, "exec": S, "terminal": BO, "categories": arr(S), "icon": S}),
  {"name": "Vim", "generic_name": "Text Editor", "exec": "vim %F", "terminal": True, "categories": ["Utility", "TextEditor"], "icon": "gvim"}),
 ("mke2fs.conf", lambda: _read("/etc/mke2fs.conf", 0, 8),
  _obj({"blocksize": I, "inode_size": I, "inode_ratio": I, "periodic_fsck": BO, "default_mount_options": arr(S)}),
  {"blocksize": 4096, "inode_size": 256, "inode_ratio": 16384, "periodic_fsck": False, "default_mount_options": ["acl", "user_xattr"]}),
 ("news-automake", lambda: _read("/usr/share/doc/automake/NEWS.gz", 0, 20),
  _obj({"latest_version": S, "several_sections": BO, "next_major_version": S}),
  {"latest_version": "1.16.5", "several_sections": True, "next_major_version": "2.0"}),
]
