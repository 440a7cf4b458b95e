"""glibc locale sources (/usr/share/i18n/locales/xx_YY): multilingual facts of one
locale (native month and day names, currency, language and territory names),
rendered programmatically (the source format itself is not a document users send).

Facts (gold from the locale file's own keywords, `<Uxxxx>` escapes decoded,
`copy` includes not followed): language, territory, native language and
country names, ISO country code, currency code (int_curr_symbol) and symbol,
international dialling prefix, first weekday (enum, from first_weekday and
the week base day 19971130 = Sunday), paper size (A4 / US letter from
LC_PAPER height), month and day names (arrays of strings), revision date,
contact e-mail, uses the euro (bool).
"""
import datetime as dt
import glob
import os
import re

from ..facts import Fact
from ..guard import is_reserved, read_text
from . import Entity

NAME = "locale"
SOURCE = "/usr/share/i18n/locales/*_*"
DAYS = ["Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"]


def find(root="/usr/share/i18n/locales"):
    return sorted(p for p in glob.glob(os.path.join(root, "*_*"))
                  if not is_reserved(p) and "@" not in os.path.basename(p)
                  and not os.path.basename(p).startswith(("iso", "translit")))


def _decode(s):
    s = re.sub(r"<U([0-9A-Fa-f]{4,8})>", lambda m: chr(int(m.group(1), 16)), s)
    return s.replace("//", "/")


def parse(text):
    """{keyword: [string values]} of the whole file (continuations joined)."""
    text = re.sub(r"/\n", "", text)
    out = {}
    for ln in text.split("\n"):
        ln = ln.strip()
        if not ln or ln.startswith(("%", "#")):
            continue
        parts = ln.split(None, 1)
        if len(parts) < 2:
            continue
        key, rest = parts
        vals = re.findall(r'"((?:[^"/]|/.)*)"', rest)
        out.setdefault(key, [_decode(v) for v in vals] if vals else [rest.strip()])
    return out


def _clean(s):
    return s if s and s == s.strip() and "\n" not in s and len(s) < 80 else None


L = {  # labels per language
    "language": {"en": "Language", "de": "Sprache", "fr": "Langue", "es": "Idioma", "it": "Lingua",
                 "pt": "Idioma", "nl": "Taal"},
    "territory": {"en": "Territory", "de": "Gebiet", "fr": "Territoire", "es": "Territorio",
                  "it": "Territorio", "pt": "Território", "nl": "Gebied"},
    "currency": {"en": "Currency", "de": "Währung", "fr": "Devise", "es": "Moneda", "it": "Valuta",
                 "pt": "Moeda", "nl": "Valuta"},
    "symbol": {"en": "Currency symbol", "de": "Währungssymbol", "fr": "Symbole monétaire",
               "es": "Símbolo de moneda"},
    "months": {"en": "Months", "de": "Monate", "fr": "Mois", "es": "Meses", "it": "Mesi",
               "pt": "Meses", "nl": "Maanden"},
    "days": {"en": "Weekdays", "de": "Wochentage", "fr": "Jours", "es": "Días", "it": "Giorni",
             "pt": "Dias", "nl": "Dagen"},
    "first": {"en": "First day of the week", "de": "Erster Wochentag",
              "fr": "Premier jour de la semaine", "es": "Primer día de la semana"},
    "paper": {"en": "Paper size", "de": "Papierformat", "fr": "Format de papier",
              "es": "Tamaño de papel"},
    "prefix": {"en": "Dialling prefix", "de": "Ländervorwahl", "fr": "Indicatif", "es": "Prefijo"},
    "date": {"en": "Revised", "de": "Stand", "fr": "Révisé le", "es": "Revisado"},
    "native_lang": {"en": "Native language name", "de": "Eigenname der Sprache",
                    "fr": "Nom natif de la langue"},
    "native_country": {"en": "Native country name", "de": "Landesname", "fr": "Nom du pays"},
}


def entity(path):
    try:
        kv = parse(read_text(path))
    except (OSError, ValueError):
        return None
    g = lambda k: _clean((kv.get(k) or [None])[0])  # noqa: E731
    lang, terr = g("language"), g("territory")
    if not lang or not terr:
        return None
    facts = [Fact("language", "span", lang, label=L["language"],
                  names=[["language"], ["lang"], ["language", "name"]],
                  desc=["the locale's language, in English"]),
             Fact("territory", "span", terr, label=L["territory"],
                  names=[["territory"], ["country"], ["region"]],
                  desc=["country or territory the locale is for (English name)"])]
    if g("lang_name") and g("lang_name") != lang:
        facts.append(Fact("native_lang", "span", g("lang_name"), label=L["native_lang"],
                          names=[["native", "language", "name"], ["endonym"], ["lang", "name"]],
                          desc=["the language's name in the language itself"]))
    if g("country_name") and g("country_name") != terr:
        facts.append(Fact("native_country", "span", g("country_name"), label=L["native_country"],
                          names=[["country", "name", "local"], ["native", "country", "name"]],
                          desc=["the country's own name for itself"]))
    cur = (kv.get("int_curr_symbol") or [""])[0].strip()
    if re.fullmatch(r"[A-Z]{3}", cur):
        facts.append(Fact("currency", "span", cur, label=L["currency"],
                          names=[["currency"], ["currency", "code"], ["iso", "currency"]],
                          desc=["ISO 4217 currency code"]))
        facts.append(Fact("euro", "bool", cur == "EUR", names=[["uses", "euro"], ["euro", "zone"]],
                          neg=([["non", "euro", "currency"], ["not", "euro"]],
                               ["true when the currency is not the euro"]),
                          desc=["is the currency the euro?"]))
    sym = g("currency_symbol")
    if sym and sym != cur:
        facts.append(Fact("symbol", "span", sym, label=L["symbol"],
                          names=[["currency", "symbol"], ["symbol"], ["money", "sign"]],
                          desc=["the local currency symbol"]))
    pre = g("int_prefix")
    if pre and pre.isdigit():
        facts.append(Fact("prefix", "int", int(pre), surface=pre, label=L["prefix"], derive=False,
                          names=[["calling", "code"], ["international", "prefix"], ["phone", "prefix"]],
                          desc=["international telephone country code (digits)"]))
    fw = (kv.get("first_weekday") or [None])[0]
    week = (kv.get("week") or [""])[0]
    if fw and fw.isdigit() and ("19971130" in week or not week) and 1 <= int(fw) <= 7:
        day = DAYS[int(fw) - 1]
        facts.append(Fact("first_weekday", "enum", day, options=DAYS, label=L["first"],
                          surface=(kv.get("day") or DAYS)[int(fw) - 1] if kv.get("day") else day,
                          names=[["first", "weekday"], ["week", "starts", "on"], ["week", "start"]],
                          desc=["the first day of the week, in English"]))
    h = (kv.get("height") or [""])[0]
    if h in ("297", "279"):
        facts.append(Fact("paper", "enum", "A4" if h == "297" else "US letter",
                          surface="A4 (210 x 297 mm)" if h == "297" else "Letter (8.5 x 11 in)",
                          options=["A4", "US letter", "A3", "legal"], label=L["paper"],
                          names=[["paper", "size"], ["paper"], ["page", "format"]],
                          desc=["default paper size"]))
    for key, fk, nm in (("mon", "months", [["months"], ["month", "names"]]),
                        ("day", "days", [["weekdays"], ["day", "names"], ["days"]])):
        vals = kv.get(key)
        if vals and all(_clean(v) for v in vals) and len(set(vals)) == len(vals):
            facts.append(Fact(fk, "list", vals, label=L[fk], names=nm, derive=False,
                              desc=[f"the {fk} in the locale's language, in order"]))
    d = g("date")
    if d:
        try:
            facts.append(Fact("revised", "date", dt.date.fromisoformat(d).isoformat(),
                              label=L["date"], names=[["revision", "date"], ["revised"], ["date"]],
                              desc=["date of the locale's last revision"]))
        except ValueError:
            pass
    em = g("email")
    if em and re.fullmatch(r"[^@\s]+@[^@\s]+\.[a-z]+", em):
        facts.append(Fact("email", "email", em, names=[["contact", "email"], ["email"]],
                          desc=["contact address for the locale"]))
    base = os.path.basename(path)
    return Entity(base, f"Locale {base}", facts)


def entities(paths, rng, n):
    out = []
    for p in rng.sample(paths, min(len(paths), n * 2)):
        e = entity(p)
        if e is not None and len(e.facts) >= 5:
            out.append(e)
        if len(out) >= n:
            break
    return out
