"""Decoding rules of libdeg 0.26.0 for copyright notices and licences, on the real SmolLM2
and the shipped checkpoint, each on the head of a real C header of this machine (bench/devreal
set 5) the 0.25.0 rules got wrong: a number named `earliest_...`/`latest_...` reads that end
of the years its notices state (lib/deg/keyvocab.c dg_key_name_extreme, fill_extract_keys.c
end_of_keys); a plain `license` reads the licence a sentence names ("Licensed under the MIT
license", fill_extract_keys.c license_names); a key line inside a C comment is read without the
comment's marks, and no span ends in them (keyprior.c, fill_extract.c word_bounded); a notice
"Portions Copyright (C) HOLDER YEAR" states its year (keyline_forms.c years_after); a JSON
member under an object a member opens is also "PARENT KEY", and of members named alike only the
least nested are key lines (keyprior.c json_parent_key, json_least_nested; npm's
balanced-match package.json, bench/devreal set 7); a contact is the author (keyvocab.c, npm's
cidr-regex package.json). Each test also fills with the checkpoint without the setting the
rule sits under, so it can fail."""
from test_decoding_rules import read_and_alone

S = {"type": "string"}
I = {"type": "integer"}


def obj(**props):
    return {"type": "object", "properties": props, "required": list(props)}


# /usr/include/expat.h (Debian 12 libexpat1-dev): its first 19 lines, "*/" and its
# first lines of code (the MIT text between them left out)
EXPAT = """/*
                            __  __            _
                         ___\\ \\/ /_ __   __ _| |_
                        / _ \\\\  /| '_ \\ / _` | __|
                       |  __//  \\| |_) | (_| | |_
                        \\___/_/\\_\\ .__/ \\__,_|\\__|
                                 |_| XML parser

   Copyright (c) 1997-2000 Thai Open Source Software Center Ltd
   Copyright (c) 2000      Clark Cooper <coopercc@users.sourceforge.net>
   Copyright (c) 2000-2005 Fred L. Drake, Jr. <fdrake@users.sourceforge.net>
   Copyright (c) 2001-2002 Greg Stein <gstein@users.sourceforge.net>
   Copyright (c) 2002-2016 Karl Waclawek <karl@waclawek.net>
   Copyright (c) 2016-2022 Sebastian Pipping <sebastian@pipping.org>
   Copyright (c) 2016      Cristian Rodr\u00edguez <crrodriguez@opensuse.org>
   Copyright (c) 2016      Thomas Beutlich <tc@tbeu.de>
   Copyright (c) 2017      Rhodri James <rhodri@wildebeest.org.uk>
   Copyright (c) 2022      Thijs Schreijer <thijs@thijsschreijer.nl>
   Licensed under the MIT license:
*/

#ifndef Expat_INCLUDED
#define Expat_INCLUDED 1

#include <stdlib.h>
#include "expat_external.h"
"""

# /usr/include/linux/ethtool.h (Debian 12 linux-libc-dev), its first 14 lines
ETHTOOL = """/* SPDX-License-Identifier: GPL-2.0 WITH Linux-syscall-note */
/*
 * ethtool.h: Defines for Linux ethtool.
 *
 * Copyright (C) 1998 David S. Miller (davem@redhat.com)
 * Copyright 2001 Jeff Garzik <jgarzik@pobox.com>
 * Portions Copyright 2001 Sun Microsystems (thockin@sun.com)
 * Portions Copyright 2002 Intel (eli.kupermann@intel.com,
 *                                christopher.leech@intel.com,
 *                                scott.feldman@intel.com)
 * Portions Copyright (C) Sun Microsystems 2008
 */

#ifndef _LINUX_ETHTOOL_H
"""


def test_the_end_of_the_years_a_name_asks_for(model, tmp_path):
    got, alone = read_and_alone(model, tmp_path, EXPAT, obj(earliest_year=I, latest_year=I),
                                "key_prior")
    assert got["value"] == {"earliest_year": 1997, "latest_year": 2022}
    assert alone["value"] != got["value"]


def test_the_year_after_the_holder_and_the_spdx_line(model, tmp_path):
    got, alone = read_and_alone(model, tmp_path, ETHTOOL, obj(latest_year=I, license=S),
                                "key_prior")
    assert got["value"] == {"latest_year": 2008, "license": "GPL-2.0 WITH Linux-syscall-note"}
    assert alone["value"] != got["value"]


def test_a_licence_a_sentence_names(model, tmp_path):
    got, alone = read_and_alone(model, tmp_path, EXPAT, obj(license=S), "key_prior")
    assert got["value"] == {"license": "MIT"}
    assert alone["value"] != got["value"]


# /usr/lib/node_modules/npm/node_modules/balanced-match/package.json (npm 10) without its
# scripts, devDependencies, keywords and testling members
BALANCED_MATCH = """{
  "name": "balanced-match",
  "description": "Match balanced character pairs, like \\"{\\" and \\"}\\"",
  "version": "1.0.2",
  "repository": {
    "type": "git",
    "url": "git://github.com/juliangruber/balanced-match.git"
  },
  "homepage": "https://github.com/juliangruber/balanced-match",
  "main": "index.js",
  "author": {
    "name": "Julian Gruber",
    "email": "mail@juliangruber.com",
    "url": "http://juliangruber.com"
  },
  "license": "MIT"
}
"""

# /usr/lib/node_modules/npm/node_modules/cidr-regex/package.json (npm 10), its head
CIDR_REGEX = """{
  "name": "cidr-regex",
  "version": "4.1.1",
  "description": "Regular expression for matching IP addresses in CIDR notation",
  "author": "silverwind <me@silverwind.io>",
  "contributors": [
    "Felipe Apostol <flipjs.io@gmail.com> (http://flipjs.io/)"
  ],
  "repository": "silverwind/cidr-regex",
  "license": "BSD-2-Clause"
}
"""


def test_json_members_by_their_parents(model, tmp_path):
    schema = obj(name=S, author_email=S, repository_url=S)
    got, alone = read_and_alone(model, tmp_path, BALANCED_MATCH, schema, "key_prior")
    assert got["value"] == {"name": "balanced-match", "author_email": "mail@juliangruber.com",
                            "repository_url": "git://github.com/juliangruber/balanced-match.git"}
    assert alone["value"] != got["value"]


def test_a_contact_is_the_author(model, tmp_path):
    got, alone = read_and_alone(model, tmp_path, CIDR_REGEX, obj(contact_email=S), "key_prior")
    assert got["value"] == {"contact_email": "me@silverwind.io"}
    assert alone["value"] != got["value"]
