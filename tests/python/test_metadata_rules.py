"""Decoding rules of libdeg 0.24.0 for package and project metadata, on the real SmolLM2
and the shipped checkpoint, each on a real file of this machine (bench/devreal set 2)
the heads get wrong alone: XML leaf elements are key lines, each key's least nested only
(lib/deg/keyline_xml.c); a block element is its identifier child's list item and a JSON
object's member keys are a list (lib/deg/lists_xml.c, lists.c); a copyright notice gives
the key lines "copyright year" and "copyright holder" (keyline_forms.c); a uri field reads
a key "url" (keyprior.c format_key); a licence choice reads the licence a text states by
its text (lib/deg/licenseprior.h). Each test also fills with the checkpoint without the
setting the rule sits under, so it can fail: the heads alone give another value."""
from test_decoding_rules import read_and_alone

S, URI = {"type": "string"}, {"type": "string", "format": "uri"}
STRINGS = {"type": "array", "items": S}


def obj(**props):
    return {"type": "object", "properties": props, "required": list(props)}


# this machine's ~/.m2/repository/org/apache/maven/maven-artifact/2.0.5/maven-artifact-2.0.5.pom
MAVEN_ARTIFACT = """<?xml version="1.0" encoding="UTF-8"?><project>
  <parent>
    <artifactId>maven</artifactId>
    <groupId>org.apache.maven</groupId>
    <version>2.0.5</version>
  </parent>
  <modelVersion>4.0.0</modelVersion>
  <artifactId>maven-artifact</artifactId>
  <name>Maven Artifact</name>
  <version>2.0.5</version>
  <dependencies>
    <dependency>
      <groupId>org.codehaus.plexus</groupId>
      <artifactId>plexus-utils</artifactId>
    </dependency>
    <dependency>
      <groupId>org.codehaus.plexus</groupId>
      <artifactId>plexus-container-default</artifactId>
      <scope>test</scope>
    </dependency>
  </dependencies>
  <distributionManagement>
    <status>deployed</status>
  </distributionManagement>
</project>"""

# ~/.m2/repository/org/slf4j/slf4j-nop/1.7.36/slf4j-nop-1.7.36.pom
SLF4J_NOP = """<?xml version="1.0" encoding="UTF-8"?>
<project xmlns="http://maven.apache.org/POM/4.0.0" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance"
         xsi:schemaLocation="http://maven.apache.org/POM/4.0.0 http://maven.apache.org/xsd/maven-4.0.0.xsd">

  <modelVersion>4.0.0</modelVersion>

  <parent>
    <groupId>org.slf4j</groupId>
    <artifactId>slf4j-parent</artifactId>
    <version>1.7.36</version>
  </parent>

  <artifactId>slf4j-nop</artifactId>

  <packaging>jar</packaging>
  <name>SLF4J NOP Binding</name>
  <description>SLF4J NOP Binding</description>
  <url>http://www.slf4j.org</url>

  <dependencies>
    <dependency>
      <groupId>org.slf4j</groupId>
      <artifactId>slf4j-api</artifactId>
    </dependency>
  </dependencies>


</project>
"""

# /usr/lib/node_modules/npm/node_modules/debug/package.json, its head
DEBUG_JSON = """{
  "name": "debug",
  "version": "4.3.5",
  "description": "Lightweight debugging utility for Node.js and the browser",
  "license": "MIT",
  "dependencies": {
    "ms": "2.1.2"
  },
  "devDependencies": {
    "brfs": "^2.0.1",
    "browserify": "^16.2.3",
    "mocha": "^5.2.0",
    "sinon": "^14.0.0",
    "xo": "^0.23.0"
  },
  "main": "./src/index.js"
}
"""

# ~/.pyenv/plugins/pyenv-virtualenv/LICENSE
PYENV_LICENSE = """Copyright (c) 2025 Yamashita, Yuu

Permission is hereby granted, free of charge, to any person obtaining
a copy of this software and associated documentation files (the
"Software"), to deal in the Software without restriction, including
without limitation the rights to use, copy, modify, merge, publish,
distribute, sublicense, and/or sell copies of the Software, and to
permit persons to whom the Software is furnished to do so, subject to
the following conditions:

The above copyright notice and this permission notice shall be
included in all copies or substantial portions of the Software.

THE SOFTWARE IS PROVIDED "AS IS", WITHOUT WARRANTY OF ANY KIND,
EXPRESS OR IMPLIED, INCLUDING BUT NOT LIMITED TO THE WARRANTIES OF
MERCHANTABILITY, FITNESS FOR A PARTICULAR PURPOSE AND
NONINFRINGEMENT. IN NO EVENT SHALL THE AUTHORS OR COPYRIGHT HOLDERS BE
LIABLE FOR ANY CLAIM, DAMAGES OR OTHER LIABILITY, WHETHER IN AN ACTION
OF CONTRACT, TORT OR OTHERWISE, ARISING FROM, OUT OF OR IN CONNECTION
WITH THE SOFTWARE OR THE USE OR OTHER DEALINGS IN THE SOFTWARE.
"""
LICENSES = {"enum": ["MIT", "ISC", "Apache-2.0", "BSD-3-Clause", "GPL-3.0-or-later",
                     "LGPL-2.1-or-later", "Zlib"]}


def test_xml_elements_are_key_lines(model, tmp_path):
    schema = obj(artifact_id=S, name=S, version=S, group_id=S)
    want = {"artifact_id": "maven-artifact", "name": "Maven Artifact", "version": "2.0.5",
            "group_id": "org.apache.maven"}  # the parent's: the project writes none
    got, alone = read_and_alone(model, tmp_path, MAVEN_ARTIFACT, schema, "key_prior")
    assert got["value"] == want
    assert alone["value"] != want


def test_xml_blocks_and_json_members_are_lists(model, tmp_path):
    schema = obj(dependencies=STRINGS)
    got, alone = read_and_alone(model, tmp_path, MAVEN_ARTIFACT, schema, "list_prior")
    assert got["value"] == {"dependencies": ["plexus-utils", "plexus-container-default"]}
    assert alone["value"] != got["value"]
    got, alone = read_and_alone(model, tmp_path / "json", DEBUG_JSON, schema, "list_prior")
    assert got["value"] == {"dependencies": ["ms"]}
    assert alone["value"] != got["value"]


def test_a_url_key_for_a_uri_field(model, tmp_path):
    schema = obj(homepage=URI)
    got, alone = read_and_alone(model, tmp_path, SLF4J_NOP, schema, "key_prior")
    assert got["value"] == {"homepage": "http://www.slf4j.org"}
    assert alone["value"] != got["value"]


def test_copyright_notice_and_licence_text(model, tmp_path):
    schema = obj(holder=S)
    got, alone = read_and_alone(model, tmp_path, PYENV_LICENSE, schema, "key_prior")
    assert got["value"] == {"holder": "Yamashita, Yuu"}
    assert alone["value"] != got["value"]
    # the MIT text names no licence: the licence prior (at key_prior.sole) reads it
    schema = obj(license=LICENSES)
    got, alone = read_and_alone(model, tmp_path / "sole", PYENV_LICENSE, schema, "key_prior",
                                "sole")
    assert got["value"] == {"license": "MIT"}
    assert alone["value"] != got["value"]


# a POM's licence name under <license> (the key "license name" names the field in part: its
# own key, so "The MIT License" states MIT; a new user's check of 0.24.0, mockito's POM)
POM_LICENSE = """<project>
  <artifactId>mockito-junit-jupiter</artifactId>
  <licenses>
    <license>
      <name>The MIT License</name>
      <url>https://github.com/mockito/mockito/blob/main/LICENSE</url>
    </license>
  </licenses>
</project>
"""


def test_licence_named_in_a_pom(model, tmp_path):
    schema = obj(license=LICENSES)
    got, alone = read_and_alone(model, tmp_path, POM_LICENSE, schema, "key_prior", "sole")
    assert got["value"] == {"license": "MIT"}
    assert got["meta"]["/license"]["probability"] > alone["meta"]["/license"]["probability"]
