"""Document builder: a context string written piece by piece, remembering
where each gold value was written (code-point offsets) and where each array
item's text lies, so gold spans come from the writer, not from guessing.

    b = Doc()
    b.text("Order ")
    b.val("/order_id", "A-1042")       # marks [6, 12) as /order_id's gold span
    with b.item("/items/0"):           # region of array item 0
        b.val("/items/0/sku", "X9")
    ctx, marks, regions = b.finish()
"""
import contextlib


class Doc:
    def __init__(self):
        self._parts = []
        self._n = 0
        self.marks = {}      # pointer -> (start, end) of the written gold text
        self.regions = {}    # item pointer -> (start, end) of the item's text

    def text(self, s):
        self._parts.append(s)
        self._n += len(s)
        return self

    def val(self, pointer, s):
        """Write `s` (the surface form of `pointer`'s gold value) and mark it.
        The first write of a pointer is its primary span."""
        s = str(s)
        if pointer is not None and pointer not in self.marks:
            self.marks[pointer] = (self._n, self._n + len(s))
        return self.text(s)

    @contextlib.contextmanager
    def item(self, pointer):
        start = self._n
        yield self
        self.regions[pointer] = (start, self._n)

    def finish(self):
        return "".join(self._parts), dict(self.marks), dict(self.regions)
