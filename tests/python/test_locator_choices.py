"""Decoding rules of libdeg 0.28.0, on the real SmolLM2 and the shipped checkpoint, each on
real text of this machine (bench/devreal sets 10 and 12) the 0.27.0 rules got wrong: a
description quoting the line that opens a paragraph reads that paragraph's keys
(lib/deg/locator.c); a choice's "other" takes a value that names none of its options
(fill_decide.c key_prior_choice); a licence option without "or later" next to its twin
means "only"; a nullable URL no key names is not another key's address (fill_extract.c
other_address). Each test also fills without what the rule reads (the quote, the option
"other", the key prior), so it can fail."""
import deg
from test_decoding_rules import read_and_alone

S = {"type": "string"}


def obj(**props):
    return {"type": "object", "properties": props, "required": list(props)}


# /var/lib/dpkg/status (Debian 12): three consecutive paragraphs
DPKG = "Package: groff-base\nStatus: install ok installed\nPriority: important\nSection: text\nInstalled-Size: 3673\nMaintainer: Colin Watson <cjwatson@debian.org>\nArchitecture: amd64\nMulti-Arch: foreign\nSource: groff\nVersion: 1.22.4-10\nDepends: libc6 (>= 2.35), libgcc-s1 (>= 4.0), libstdc++6 (>= 4.1.1), libuchardet0 (>= 0.0.1)\nSuggests: groff\nConffiles:\n /etc/groff/man.local c8d6e2bf36a23e2e9599f7f66ab05463\n /etc/groff/mdoc.local 4bc6267468942826b757fa2f868c8237\nDescription: GNU troff text-formatting system (base system components)\n This package contains the traditional UN*X text formatting tools\n troff, nroff, tbl, eqn, and pic. These utilities, together with the\n man-db package, are essential for displaying the on-line manual pages.\n .\n groff-base is a stripped-down package containing the necessary components\n to read manual pages in ASCII, Latin-1, and UTF-8, plus the PostScript\n device (groff's default). Users who want a full groff installation, with\n the standard set of devices, fonts, macros, and documentation, should\n install the groff package.\nHomepage: https://www.gnu.org/software/groff/\n\nPackage: gsettings-desktop-schemas\nStatus: install ok installed\nPriority: optional\nSection: gnome\nInstalled-Size: 5111\nMaintainer: Debian GNOME Maintainers <pkg-gnome-maintainers@lists.alioth.debian.org>\nArchitecture: all\nMulti-Arch: foreign\nVersion: 43.0-1\nDepends: dconf-gsettings-backend | gsettings-backend\nBreaks: gnome-control-center (<< 1:3.19.92), gnome-settings-daemon (<< 3.19.92), gnome-shell (<< 40), mutter (<< 3.31.4), nautilus (<< 3.7.92)\nDescription: GSettings desktop-wide schemas\n gsettings-desktop-schemas contains a collection of GSettings schemas for\n settings shared by various components of a desktop.\nHomepage: https://www.gnome.org/\n\nPackage: gtk-update-icon-cache\nStatus: install ok installed\nPriority: optional\nSection: misc\nInstalled-Size: 125\nMaintainer: Debian GNOME Maintainers <pkg-gnome-maintainers@lists.alioth.debian.org>\nArchitecture: amd64\nMulti-Arch: foreign\nSource: gtk+3.0\nVersion: 3.24.38-2~deb12u3\nReplaces: libgtk-3-bin (<< 3.20.6-1), libgtk2.0-bin (<< 2.24.30-2)\nDepends: libc6 (>= 2.34), libgdk-pixbuf-2.0-0 (>= 2.40.0), libglib2.0-0 (>= 2.57.2)\nBreaks: libgtk-3-bin (<< 3.20.6-1), libgtk2.0-bin (<< 2.24.30-2)\nDescription: icon theme caching utility\n gtk-update-icon-cache creates mmap()able cache files for icon themes.\n .\n GTK can use the cache files created by gtk-update-icon-cache to avoid a lot\n of system call and disk seek overhead when the application starts. Since the\n format of the cache files allows them to be mmap()ed shared between multiple\n applications, the overall memory consumption is reduced as well.\nHomepage: https://www.gtk.org/\n"

# /usr/lib/node_modules/npm/node_modules/spdx-exceptions/package.json
SPDX_EXCEPTIONS = "{\n  \"name\": \"spdx-exceptions\",\n  \"description\": \"list of SPDX standard license exceptions\",\n  \"version\": \"2.5.0\",\n  \"author\": \"The Linux Foundation\",\n  \"contributors\": [\n    \"Kyle E. Mitchell <kyle@kemitchell.com> (https://kemitchell.com/)\"\n  ],\n  \"license\": \"CC-BY-3.0\",\n  \"repository\": \"kemitchell/spdx-exceptions.json\",\n  \"files\": [\n    \"index.json\",\n    \"deprecated.json\"\n  ],\n  \"scripts\": {\n    \"build\": \"node build.js\",\n    \"latest\": \"node latest.js\"\n  }\n}\n"

# /usr/lib/node_modules/npm/node_modules/abbrev/package.json: no "homepage"
ABBREV = "{\n  \"name\": \"abbrev\",\n  \"version\": \"2.0.0\",\n  \"description\": \"Like ruby's abbrev module, but in js\",\n  \"author\": \"GitHub Inc.\",\n  \"main\": \"lib/index.js\",\n  \"scripts\": {\n    \"test\": \"tap\",\n    \"lint\": \"eslint \\\"**/*.js\\\"\",\n    \"postlint\": \"template-oss-check\",\n    \"template-oss-apply\": \"template-oss-apply --force\",\n    \"lintfix\": \"npm run lint -- --fix\",\n    \"snap\": \"tap\",\n    \"posttest\": \"npm run lint\"\n  },\n  \"repository\": {\n    \"type\": \"git\",\n    \"url\": \"https://github.com/npm/abbrev-js.git\"\n  },\n  \"license\": \"ISC\",\n  \"devDependencies\": {\n    \"@npmcli/eslint-config\": \"^4.0.0\",\n    \"@npmcli/template-oss\": \"4.8.0\",\n    \"tap\": \"^16.3.0\"\n  },\n  \"tap\": {\n    \"nyc-arg\": [\n      \"--exclude\",\n      \"tap-snapshots/**\"\n    ]\n  },\n  \"files\": [\n    \"bin/\",\n    \"lib/\"\n  ],\n  \"engines\": {\n    \"node\": \"^14.17.0 || ^16.13.0 || >=18.0.0\"\n  },\n  \"templateOSS\": {\n    \"//@npmcli/template-oss\": \"This file is partially managed by @npmcli/template-oss. Edits may be overwritten.\",\n    \"version\": \"4.8.0\"\n  }\n}\n"

LICENSES = ["MIT", "ISC", "Apache-2.0", "BSD-2-Clause", "BSD-3-Clause", "other"]


def test_description_quotes_its_paragraph(model):
    ck = deg.load(deg.default_checkpoint_path(), model=model)
    pkg = "gsettings-desktop-schemas"
    schema = obj(version=dict(S, description=f"version of {pkg} (Package: {pkg})"),
                 installed_size={"type": "integer",
                                 "description": "installed size in KiB "
                                                "(Package: gtk-update-icon-cache)"})
    got = ck.fill(DPKG, schema)
    assert got["value"] == {"version": "43.0-1", "installed_size": 125}
    unquoted = obj(version=dict(S, description=f"version of {pkg}"),
                   installed_size={"type": "integer", "description": "installed size in KiB"})
    alone = ck.fill(DPKG, unquoted)["value"]
    assert alone["version"] != "43.0-1" and alone["installed_size"] != 125


def test_other_takes_a_licence_no_option_names(model):
    ck = deg.load(deg.default_checkpoint_path(), model=model)
    lic = {"enum": LICENSES, "description": "licence of the package"}
    got = ck.fill(SPDX_EXCEPTIONS, obj(name=S, license=lic))
    assert got["value"] == {"name": "spdx-exceptions", "license": "other"}
    # without "other" the same value gave a listed licence, at odds with "CC-BY-3.0"
    was = ck.fill(SPDX_EXCEPTIONS, obj(name=S, license=dict(lic, enum=LICENSES[:-1])))
    assert was["value"]["license"] in LICENSES[:-1]


def test_or_later_twin_means_only(model):
    ck = deg.load(deg.default_checkpoint_path(), model=model)
    doc = "Program: GnuPG\nHomepage: https://www.gnupg.org\nLicense: GPL-3.0-or-later\n"
    for enum, want in ((["GPL-3.0", "GPL-3.0+", "other"], "GPL-3.0+"),
                       (["GPL-3.0+", "GPL-3.0", "other"], "GPL-3.0+")):
        got = ck.fill(doc, obj(license={"enum": enum}))
        assert got["value"] == {"license": want}, enum


def test_repository_url_is_no_homepage(model, tmp_path):
    schema = obj(homepage={"type": ["string", "null"], "format": "uri",
                           "description": "project homepage URL"})
    got, alone = read_and_alone(model, tmp_path, ABBREV, schema, "key_prior")
    assert got["value"] == {"homepage": None}
    assert got["meta"]["/homepage"]["null_reason"] == "other_address"
    assert alone["value"]["homepage"] is not None


def test_copyright_address_is_no_contact(model, tmp_path):
    """An address in a folded "Copyright:" value (its continuation line) is a holder's, not
    the contact's a document without a contact line leaves unwritten."""
    schema = obj(name=S, contact_email={"type": ["string", "null"], "format": "email",
                                        "description": "e-mail address of the upstream contact"})
    doc = ("Name: libfoo\nCopyright: 2001 Jane Roe\n"
           "           2003 John Doe <john@example.org>\nLicense: MIT\n")
    got, alone = read_and_alone(model, tmp_path, doc, schema, "key_prior")
    assert got["value"] == {"name": "libfoo", "contact_email": None}
    assert got["meta"]["/contact_email"]["null_reason"] == "other_address"
    assert alone["value"]["contact_email"] == "john@example.org"
