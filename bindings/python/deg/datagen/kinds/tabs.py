"""Small tabular system files and licence texts: time zones by country
(/usr/share/zoneinfo/zone.tab + iso3166.tab, kind `zone`), IANA service
ports (/etc/services, kind `services`) and the common licence texts
(/usr/share/common-licenses, kind `license`; not Debian copyright files).

zone: country code and name, its zones (array of objects: TZ name,
coordinates, comment), whether it has several zones. services: a run of
consecutive /etc/services lines (array of objects: name, port, protocol,
aliases) and the first service's port. license: the opening of a licence
text (title line, version number, date, URL, organisation) and whether it is
a copyleft licence (from the file name: GPL*, LGPL*, GFDL*, MPL* are).
"""
import glob
import os
import re

from ...errors import DegError
from ...parsers import candidates, parse_date
from ..facts import Fact
from ..guard import is_reserved, read_text
from . import Entity, Writer


def _lines(path):
    return [ln for ln in read_text(path).split("\n") if ln.strip() and not ln.startswith("#")]


class _Zone:
    NAME, SOURCE = "zone", "/usr/share/zoneinfo/zone.tab + iso3166.tab"

    def find(self, root="/usr/share/zoneinfo"):
        ps = [os.path.join(root, "zone.tab"), os.path.join(root, "iso3166.tab")]
        return ps if all(os.path.isfile(p) and not is_reserved(p) for p in ps) else []

    def entities(self, paths, rng, n):
        names = dict(ln.split("\t", 1) for ln in _lines(paths[1]) if "\t" in ln)
        by = {}
        for ln in _lines(paths[0]):
            parts = ln.split("\t")
            if len(parts) >= 3:
                by.setdefault(parts[0], []).append(parts[1:4])
        out = []
        for cc in rng.sample(sorted(by), min(n, len(by))):
            if cc not in names:
                continue
            w = Writer()
            items, region = [], []
            for coord, tz, *comment in by[cc][:8]:
                a = w._n
                w.text(cc + "\t")
                it = {"coord": Fact("coord", "span", coord, pos=w.put(coord))}
                w.text("\t")
                it["tz"] = Fact("tz", "span", tz, pos=w.put(tz))
                if comment and comment[0]:
                    w.text("\t")
                    it["comment"] = Fact("comment", "span", comment[0], pos=w.put(comment[0]))
                w.text("\n")
                items.append(it)
                region.append((a, w._n))
            w.text("\n# iso3166.tab\n")
            cpos = w.put(cc)
            w.text("\t")
            npos = w.put(names[cc])
            w.text("\n")
            facts = [
                Fact("code", "span", cc, pos=cpos, names=[["country", "code"], ["iso", "code"], ["code"]],
                     label={"en": "Country code", "de": "Ländercode", "fr": "Code pays",
                            "es": "Código de país"}, desc=["ISO 3166 alpha-2 code"]),
                Fact("country", "span", names[cc], pos=npos, names=[["country"], ["country", "name"]],
                     label={"en": "Country", "de": "Land", "fr": "Pays", "es": "País"},
                     desc=["the country's name"]),
                Fact("zones", "objects", [1] * len(items), items=items, region=region, pos=True,
                     sub=[("tz", "span", [["tz"], ["zone"], ["timezone"]], {"en": "Time zone"}),
                          ("coord", "span", [["coordinates"], ["position"]], {"en": "Coordinates"}),
                          ("comment", "span", [["comment"], ["area"], ["note"]], {"en": "Comment"})],
                     names=[["zones"], ["time", "zones"], ["tz", "list"]],
                     label={"en": "Time zones", "de": "Zeitzonen", "fr": "Fuseaux horaires",
                            "es": "Zonas horarias"}, desc=["the country's time zones, in file order"]),
                Fact("multi", "bool", len(by[cc]) > 1, names=[["several", "zones"], ["multiple", "timezones"]],
                     neg=([["single", "zone"], ["one", "timezone"]], ["true if the country has one zone"]),
                     desc=["does the country have more than one time zone?"]),
            ]
            out.append(Entity(cc, f"Time zones of {names[cc]}", facts, raw=w.finish()[0]))
        return out


class _Services:
    NAME, SOURCE = "services", "/etc/services"

    def find(self, root="/etc"):
        p = os.path.join(root, "services")
        return [p] if os.path.isfile(p) and not is_reserved(p) else []

    def entities(self, paths, rng, n):
        rows = []
        for ln in _lines(paths[0]):
            m = re.match(r"^(\S+)\s+(\d+)/(tcp|udp|sctp|ddp)\b([^#]*)(#.*)?$", ln)
            if m:
                rows.append(m)
        out = []
        for _ in range(n):
            if len(rows) < 4:
                break
            i = rng.randrange(len(rows) - 3)
            chunk = rows[i:i + rng.randint(3, 8)]
            w = Writer()
            items, region = [], []
            for m in chunk:
                a = w._n
                it = {"name": Fact("name", "span", m.group(1), pos=w.put(m.group(1)))}
                w.text(" " * max(1, 16 - len(m.group(1))))
                it["port"] = Fact("port", "int", int(m.group(2)), surface=m.group(2), pos=w.put(m.group(2)))
                w.text("/")
                it["proto"] = Fact("proto", "span", m.group(3), pos=w.put(m.group(3)))
                al = m.group(4).strip()
                if al:
                    w.text("\t\t")
                    it["aliases"] = Fact("aliases", "span", al, pos=w.put(al))
                w.text(("\t\t" + m.group(5)) if m.group(5) else "")
                w.text("\n")
                items.append(it)
                region.append((a, w._n))
            first = items[0]
            facts = [
                Fact("services", "objects", [1] * len(items), items=items, region=region, pos=True,
                     sub=[("name", "span", [["name"], ["service"]], {"en": "Service"}),
                          ("port", "int", [["port"], ["port", "number"]], {"en": "Port"}),
                          ("proto", "span", [["protocol"], ["transport"]], {"en": "Protocol"}),
                          ("aliases", "span", [["aliases"], ["other", "names"]], {"en": "Aliases"})],
                     names=[["services"], ["entries"], ["ports"]], label={"en": "Services"},
                     desc=["the service entries, in order"]),
                Fact("first_port", "int", first["port"].value, surface=first["port"].surface,
                     pos=first["port"].pos, names=[["first", "port"], ["port"]],
                     desc=["port number of the first service listed"]),
                Fact("first_name", "span", first["name"].value, pos=first["name"].pos,
                     names=[["first", "service"], ["service", "name"]],
                     desc=["name of the first service listed"]),
            ]
            out.append(Entity(f"services@{i}", "Services", facts, raw=w.finish()[0]))
        return sorted({e.doc: e for e in out}.values(), key=lambda e: e.doc)


COPYLEFT = ("GPL", "LGPL", "GFDL", "MPL")


class _License:
    NAME, SOURCE = "license", "/usr/share/common-licenses/*"

    def find(self, root="/usr/share/common-licenses"):
        return sorted(p for p in glob.glob(os.path.join(root, "*"))
                      if os.path.isfile(p) and not os.path.islink(p) and not is_reserved(p))

    def entities(self, paths, rng, n):
        out = []
        for p in paths[:n]:
            text = read_text(p, limit=8192)
            cut = text.find("\n", 1200)
            text = text[:cut + 1 if cut > 0 else 1200]
            base = os.path.basename(p)
            facts = []
            m = re.search(r"^\s*(\S[^\n]{5,70}?)\s*$", text, re.M)
            if m:
                facts.append(Fact("title", "span", m.group(1), pos=(m.start(1), m.end(1)),
                                  names=[["title"], ["license", "name"], ["name"]],
                                  desc=["the licence's title line"]))
            m = re.search(r"Version (\d+(?:\.\d+)*)", text)
            if m:
                facts.append(Fact("version", "span", m.group(1), pos=(m.start(1), m.end(1)),
                                  names=[["version"], ["license", "version"]],
                                  desc=["the licence version number"]))
            for s, e in candidates("date", text)[:1]:
                try:
                    facts.append(Fact("date", "date", parse_date(text[s:e]), surface=text[s:e],
                                      pos=(s, e), names=[["date"], ["published"], ["release", "date"]],
                                      desc=["when this version was published"]))
                except DegError:
                    pass
            m = re.search(r"https?://[^\s<>]+[^\s<>.,]", text)
            if m:
                facts.append(Fact("url", "uri", m.group(0), pos=(m.start(), m.end()),
                                  names=[["url"], ["website"], ["link"]], desc=["the web address given"]))
            m = re.search(r"(Free Software Foundation, Inc\.|The Regents of the University of California"
                          r"|The Perl Foundation|Mozilla Foundation)", text)
            if m:
                facts.append(Fact("org", "span", m.group(1), pos=(m.start(1), m.end(1)),
                                  names=[["organisation"], ["organization"], ["steward"], ["publisher"]],
                                  desc=["the organisation named in the text"]))
            facts.append(Fact("copyleft", "bool", base.startswith(COPYLEFT),
                              names=[["copyleft"], ["is", "copyleft"], ["share", "alike"]],
                              neg=([["permissive"], ["not", "copyleft"]],
                                   ["true for a permissive (non-copyleft) licence"]),
                              desc=["is it a copyleft licence?"]))
            if len(facts) >= 3:
                out.append(Entity(base, base, facts, raw=text))
        return out


ZONE, SERVICES, LICENSE = _Zone(), _Services(), _License()
