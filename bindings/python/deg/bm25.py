"""Okapi BM25 lexical scores over a small collection of texts (the fleet
index's lexical half, deg.fleets).

Scoring is Lucene's BM25 (Robertson & Zaragoza, "The Probabilistic Relevance
Framework: BM25 and Beyond", 2009, eq. 3.15 with Lucene's non-negative idf;
the same as the `bm25s` package's method="lucene", which the golden test
compares against): for a query q and a text d of |d| words in a collection
of N texts of mean length L,

    score(q, d) = sum over query words w (with repeats) of
                  idf(w) * tf(w, d) / (tf(w, d) + k1 * (1 - b + b * |d| / L))
    idf(w)      = ln(1 + (N - df(w) + 0.5) / (df(w) + 0.5))

with tf the count of w in d and df the number of texts holding w; k1 = 1.2,
b = 0.75 (Lucene's defaults). Words: maximal runs of ASCII letters and
digits, lower-cased (so "man-db" is the words "man" and "db"), minus a short
list of English function words (STOP_WORDS), which carry no topic.
"""
import math
import re
from collections import Counter

__all__ = ["BM25", "words", "STOP_WORDS"]

_WORD = re.compile(r"[a-z0-9]+")
STOP_WORDS = frozenset(
    "a an and are as at be by can did do does for from how i in is it its me my no not of "
    "on or that the their them there they this to was were what when where which who whom "
    "why with you your".split())


def words(text):
    """The scored words of text (list of str, in order)."""
    return [w for w in _WORD.findall(text.lower()) if w not in STOP_WORDS]


class BM25:
    """BM25 over texts (a sequence of str). scores(query) -> list of float,
    one per text in order (0.0 for a text sharing no word with the query)."""

    def __init__(self, texts, k1=1.2, b=0.75):
        if k1 < 0 or not 0.0 <= b <= 1.0:
            raise ValueError(f"BM25 needs k1 >= 0 and 0 <= b <= 1 (got {k1}, {b})")
        self.k1, self.b = float(k1), float(b)
        self.tf = [Counter(words(t)) for t in texts]
        self.len = [sum(c.values()) for c in self.tf]
        self.n = len(self.tf)
        self.avg = (sum(self.len) / self.n) if self.n else 0.0
        df = Counter()
        for c in self.tf:
            df.update(c.keys())
        self.idf = {w: math.log(1.0 + (self.n - k + 0.5) / (k + 0.5)) for w, k in df.items()}

    def scores(self, query):
        q = words(query)
        out = []
        for c, n in zip(self.tf, self.len):
            norm = self.k1 * (1.0 - self.b + self.b * n / self.avg) if self.avg else 0.0
            s = 0.0
            for w in q:
                f = c.get(w, 0)
                if f:
                    s += self.idf[w] * f / (f + norm)
            out.append(s)
        return out
