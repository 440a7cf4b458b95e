"""The per-field chat baseline (issue 12): the same model, asked one plain chat
question per leaf field, its answers parsed into the field's type.

    from deg.baseline.chat import ChatBaselineSystem
    sys = ChatBaselineSystem()            # default model; greedy; deg's own runtime
    sys(context, schema) -> {"value", "meta": {}, "usage", "raw": {pointer: answer}}

Prompt: the model's chat layout (deg.Model.chat_tokenize, ChatML with its default
system turn), one user turn "<document>\\n\\n<question>", greedy decoding to EOS
or `max_answer_tokens` (32; list questions `max_list_tokens`, 96). The
document's tokens are prefilled once per record into a deg.Trunk and each
question continues it in a Fork, the token sequence being exactly that of
deg.Model.generate(messages) (a question whose tokens do not extend the
trunk's runs as a whole prompt with Model.generate). Questions are asked in
rounds (the top-level ones, then those the array counts reveal), each round's
forks decoded together in batches of `batch` rows (deg_forks_generate: a
row's ids do not depend on the other rows, bitwise).

Questions come from the field's key (underscores as spaces) or title and its
description (question_for). Answers are parsed by parse_answer:
  * every answer: whitespace stripped, the first non-empty line kept, one pair of
    surrounding quotes or backticks removed; "none", "null", "n/a", "unknown",
    "not given", "not specified", "not mentioned" (a trailing "." ignored) = no value;
  * extract.span: with format email/uri/uuid the first substring deg's
    candidate scanner finds of that format; a plain string: the first quoted
    part ("...", `...`, '...') if the answer quotes one, else the text after a
    lead-in "<words> is|are|was|were" or "<words>: " ("The version is 1.2." ->
    "1.2"), one trailing "." removed;
  * extract.number / extract.date: the first number / date (date-time)
    candidate, parsed by deg's deterministic parsers;
  * decide.noul: "yes"/"true" -> true, "no"/"false" -> false (first word);
  * decide.choice: the option equal to the answer (case-folded), else the
    longest option written in it; true/false options also match yes/no, a null
    option "none";
  * decide.score: the first integer that is one of the levels;
  * generate: the text (first line), cut at the last space before maxLength.
A parsed value the leaf's own schema rejects counts as no value. No value
becomes null where the field is nullable, is left out where it is optional, and
is null (an invalid response) where the field is required and not nullable.
Arrays: items of scalars come from one "List every ..." question (one item per
line, bullets and numbering removed, lines ending in ":" and repeated items
skipped); arrays of objects from a "How many ..."
question (clamped to minItems .. min(maxItems, max_items)) and then one
question per item leaf ("In item 2 of the <array>: ..."). The baseline has no
confidences: meta is empty.
"""
import json
import re

from ..fetch import default_model_path
from ..model import feed_forks, generate_forks, load_model
from ..parsers import candidates, parse_date, parse_datetime, parse_number, validate
from ..schema import compile_schema

__all__ = ["ChatBaselineSystem", "question_for", "list_question", "count_question", "parse_answer",
           "parse_list", "assemble"]

_NONE = {"", "none", "null", "n/a", "na", "unknown", "not given", "not specified",
         "not mentioned", "not available"}
_OMIT = object()
_MAX_PASSES = 16  # rounds of questions: 1 + the schema's array nesting depth suffice


def _label(key, title=None):
    return title or str(key).replace("_", " ")


def _about(desc):
    return f" ({desc.rstrip('?').rstrip()})" if desc else ""


def _opt_text(o):
    if o is None:
        return "none"
    if o is True:
        return "yes"
    if o is False:
        return "no"
    return str(o)


def question_for(f, key, where=""):
    """The question for leaf FieldPlan f named `key`; `where` prefixes it
    (e.g. "In item 2 of the entries: ")."""
    label, desc = _label(key, f.title), f.description
    may_lack = f.nullable or not f.required
    if f.mode == "decide.noul":
        q = desc if desc and desc.endswith("?") else f"Is it true: {label}{_about(desc)}?"
        return f"{where}{q[0].upper()}{q[1:]} Answer yes or no."
    if f.mode == "decide.choice":
        opts = ", ".join(_opt_text(o) for o in f.options)
        return (f"{where}What is the {label}{_about(desc)}? Choose one of: {opts}. "
                "Answer with the option only.")
    if f.mode == "decide.score":
        levels = list(f.levels)
        lab = f.level_labels or []
        marks = ", ".join(f"{lv} = {t}" for lv, t in zip(levels, lab) if t)
        q = (f"{where}What is the {label}{_about(desc)}? Answer with a whole number from "
             f"{levels[0]} to {levels[-1]}" + (f" ({marks})" if marks else "") + ".")
        return q + (" If the document does not say, answer none." if f.null_outcome else "")
    if f.mode == "generate":
        return f"{where}Write the {label}{_about(desc)}. Answer with the text only."
    kind = {"extract.date": "the date", "extract.number": "the number"}.get(f.mode, "the value")
    if f.format == "email":
        kind = "the e-mail address"
    elif f.format == "uri":
        kind = "the URL"
    return (f"{where}What is the {label}{_about(desc)}? Answer with {kind} only, as written "
            "in the document." + (" If the document does not say, answer none." if may_lack else ""))


def list_question(key, a, where=""):
    """The question for an array of scalars (ArrayPlan a)."""
    return (f"{where}List every {_label(key, a.title)}{_about(a.description)}. Answer with one per "
            "line and nothing else; answer none if there is none.")


def count_question(key, a, where=""):
    """The question for the item count of an array of objects."""
    return (f"{where}How many {_label(key, a.title)}{_about(a.description)} are there? "
            "Answer with a number.")


def _clean(text):
    lines = [x.strip() for x in str(text).splitlines() if x.strip()]
    t = lines[0] if lines else ""
    if len(t) >= 2 and t[0] == t[-1] and t[0] in "\"'`":
        t = t[1:-1].strip()
    return t


def _is_none(t):
    return t.rstrip(".").strip().casefold() in _NONE


_QUOTED = re.compile(r'"([^"]+)"|\u201c([^\u201d]+)\u201d|`([^`]+)`|(?<![\w])\'([^\']+)\'(?![\w])')
_LEAD_IN = re.compile(r"^(?:the\s+)?[^\n.:]{0,80}?\s(?:is|are|was|were)\s*:?\s+", re.I)


def _strip_lead_in(t):
    """A plain string answer's value: the first quoted part if any is quoted, else
    the text after a lead-in "... is" / "...:" (when something follows it), a
    trailing "." removed."""
    m = _QUOTED.search(t)
    if m:
        return next(g for g in m.groups() if g is not None).strip()
    m = _LEAD_IN.match(t)
    if m and t[m.end():].strip():
        t = t[m.end():]
    elif ": " in t and t.index(": ") < 60:
        t = t.split(": ", 1)[1]
    return t.strip().rstrip(".").strip()


def _first_candidate(kind, t):
    c = candidates(kind, t)
    return t[c[0][0]:c[0][1]] if c else None


def parse_answer(f, text):
    """The value of leaf FieldPlan f in answer `text`, or None (module doc)."""
    t = _clean(text)
    if f.mode == "decide.choice":
        return _parse_choice(f.options, t)
    if _is_none(t):
        return None
    if f.mode == "decide.noul":
        w = re.split(r"[\s.,!:;]+", t.casefold(), maxsplit=1)[0]
        return {"yes": True, "true": True, "no": False, "false": False}.get(w)
    if f.mode == "decide.score":
        for m in re.finditer(r"-?\d+", t):
            if int(m.group(0)) in f.levels:
                return int(m.group(0))
        return None
    if f.mode == "extract.number":
        integer = f.type == "integer"
        s = _first_candidate("integer" if integer else "number", t)
        try:
            return parse_number(s, integer=integer) if s is not None else None
        except Exception:  # deg's parser: FormatError / RangeError
            return None
    if f.mode == "extract.date":
        dt = f.format == "date-time"
        s = _first_candidate("date-time" if dt else "date", t)
        try:
            return None if s is None else (parse_datetime(s) if dt else parse_date(s))
        except Exception:
            return None
    if f.mode == "extract.span" and f.format in ("email", "uri", "uuid"):
        return _first_candidate(f.format, t)
    if f.mode == "generate":
        limit = (f.constraints or {}).get("maxLength")
        if limit is not None and len(t) > limit:
            cut = t[:limit].rsplit(" ", 1)[0]
            t = cut if cut else t[:limit]
        return t
    t = _strip_lead_in(t)
    return None if _is_none(t) else t


def _parse_choice(options, t):
    fold = t.rstrip(".").strip().casefold()
    names = [(_opt_text(o).casefold(), o) for o in options]
    for n, o in names:
        if fold == n or (isinstance(o, bool) and fold == str(o).casefold()):
            return o if o is not None else _NULL_CHOICE
    hits = [(len(n), o) for n, o in names
            if re.search(r"(?<![\w-])" + re.escape(n) + r"(?![\w+-])", fold)]
    if not hits:
        return None
    best = max(h[0] for h in hits)
    top = [o for n, o in hits if n == best]
    if len(top) != 1:
        return None
    return top[0] if top[0] is not None else _NULL_CHOICE


_NULL_CHOICE = object()  # the choice "none" (a null option), distinct from "no answer"


def parse_list(f, text, cap):
    """Items of an array of scalars (leaf FieldPlan f of the items) in a list answer."""
    out = []
    for line in str(text).splitlines():
        line = re.sub(r"^\s*(?:[-*\u2022]|\d+[.)])\s*", "", line).strip().rstrip(",;")
        if not line or _is_none(line) or line.endswith(":"):
            continue
        v = parse_answer(f, line)
        if v is not None and v is not _NULL_CHOICE and v not in out:
            out.append(v)
        if len(out) >= cap:
            break
    return out


def _resolve(schema, loc):
    node = schema
    for part in loc.lstrip("/").split("/") if loc else []:
        part = part.replace("~1", "/").replace("~0", "~")
        node = node[int(part)] if isinstance(node, list) else node[part]
    return node


def assemble(schema, ask, max_items=8, max_list_tokens=None):
    """The value of `schema` built from answers: ask(question, max_tokens=None)
    -> answer text (list questions pass max_list_tokens).
    Returns (value, raw) with raw {pointer: answer}."""
    plan = compile_schema(schema)
    fields = {tuple(f.path): f for f in plan.fields}
    arrays = {tuple(a.path): a for a in plan.arrays}
    raw = {}

    def leaf_value(f, key, ptr, where):
        ans = ask(question_for(f, key, where))
        raw[ptr] = ans
        v = parse_answer(f, ans)
        if v is _NULL_CHOICE:
            return None
        if v is not None and validate(_resolve(schema, f.schema_loc), v):
            v = None  # its own schema rejects it: no value
        if v is None and f.on_null == "omit":
            return _OMIT
        return v

    def build(path, ptr, key, where):
        if path in fields:
            return leaf_value(fields[path], key, ptr, where)
        if path in arrays:
            a = arrays[path]
            cap = max_items if a.max_items is None else min(a.max_items, max_items)
            item_path = path + ("*",)
            if item_path in fields:  # scalars: one list question
                ans = ask(list_question(key, a, where), max_list_tokens)
                raw[ptr] = ans
                return parse_list(fields[item_path], ans, cap)
            ans = ask(count_question(key, a, where))
            raw[ptr] = ans
            m = re.search(r"\d+", _clean(ans))
            n = max(a.min_items, min(int(m.group(0)) if m else 0, cap))
            items = []
            for i in range(n):
                w = f"In item {i + 1} of the {_label(key, a.title)}: "
                items.append(build(item_path, f"{ptr}/{i}", key, where + w))
            return items
        obj = {}
        props = _resolve(schema, _loc_of(path))["properties"]
        for k in props:
            v = build(path + (k,), f"{ptr}/{k}", k, where)
            if v is not _OMIT:
                obj[k] = v
        return obj

    def _loc_of(path):
        loc = ""
        for p in path:
            loc += "/items" if p == "*" else "/properties/" + p.replace("~", "~0").replace("/", "~1")
        return loc

    return build((), "", None, ""), raw


class ChatBaselineSystem:
    """Callable (context, schema) -> response, one greedy chat answer per leaf."""

    def __init__(self, model_path=None, n_threads=1, max_answer_tokens=32, max_list_tokens=96,
                 max_items=8, batch=16):
        from ..runtime import set_num_threads
        set_num_threads(n_threads)
        self.model_path = str(model_path or default_model_path())
        self.model = load_model(self.model_path)
        self.max_answer_tokens = max_answer_tokens
        self.max_list_tokens = max_list_tokens
        self.max_items = max_items
        self.batch = batch

    def _prompt_ids(self, context, question):
        msgs = [{"role": "user", "content": f"{context}\n\n{question}"}]
        return self.model.chat_tokenize(msgs)

    def _answer(self, ctx, head, trunk, keys, usage):
        """{(question, max_tokens): answer text} for keys: the questions whose
        tokens extend the trunk run as forks batched by max_tokens (rows are
        bitwise independent, so each equals its own Model.generate), any other
        alone with Model.generate."""
        out, rows = {}, {}
        for q, cap in keys:
            ids = self._prompt_ids(ctx, q)
            if ids[:len(head)] == head:
                rows.setdefault(cap, []).append(((q, cap), ids[len(head):]))
            else:
                g = self.model.generate(ids, max_tokens=cap, temperature=0.0)
                usage["prompt_tokens"] += len(ids)
                usage["generated_tokens"] += len(g.ids)
                out[(q, cap)] = g.text
        for cap, batch in rows.items():
            for k in range(0, len(batch), self.batch):
                part = batch[k:k + self.batch]
                forks = [trunk.fork() for _ in part]
                try:
                    feed_forks(forks, [ids for _, ids in part])
                    gens = generate_forks(forks, max_tokens=cap, temperature=0.0)
                finally:
                    for f in forks:
                        f.close()
                for (key, ids), g in zip(part, gens):
                    usage["prompt_tokens"] += len(ids)
                    usage["generated_tokens"] += len(g.ids)
                    out[key] = g.text
        return out

    def __call__(self, context, schema):
        ctx = context if isinstance(context, str) else json.dumps(context, ensure_ascii=False)
        # the shared prefix: the prompt up to the document, less a few tokens at the seam
        head = self._prompt_ids(ctx, "?")[:-8]
        trunk = self.model.trunk(head)
        usage = {"prompt_tokens": len(head), "generated_tokens": 0}
        answers, pending = {}, []

        def ask(question, max_tokens=None):
            key = (question, max_tokens or self.max_answer_tokens)
            if key in answers:
                return answers[key]
            if key not in pending:
                pending.append(key)
            return ""  # no answer yet: no value, no array items

        try:
            # Pass k asks what pass k-1's answers reveal (array counts -> item
            # questions); a question's answer does not depend on when it is asked.
            for _ in range(_MAX_PASSES):
                pending.clear()
                value, raw = assemble(schema, ask, self.max_items, self.max_list_tokens)
                if not pending:
                    break
                answers.update(self._answer(ctx, head, trunk, pending, usage))
            else:
                raise RuntimeError(f"schema needs more than {_MAX_PASSES} rounds of questions")
        finally:
            trunk.close()
        return {"value": value, "meta": {}, "usage": usage, "raw": raw}
