"""One-line documents with plainly present values: a hand-written probe of the null decision.

    python bench/fill_short_docs.py CKPT_DIR [CKPT_DIR ...]

Fills 12 one-line documents (17 fields, each value written in the text) with each checkpoint on the
default model and prints the misses and the fields right. Written by hand (issue 12, session 8) after
a fresh user found smollm2-135m-v6 omitting the e-mail of the README's "Order 4711 from
ann@example.com" example; datagen documents are longer, so the heads see few one-liners.
Measured (libdeg 0.3.0): smollm2-135m-v4 13/17, smollm2-135m-v6 11/17 (v6 omits ann@example.com in
both schemas; both omit "room 4", the ticket line's two fields and frank@shop.co).
libdeg 0.5.0: smollm2-135m-v7 11/17, the same six misses as v6 (session 10).
"""
import deg, sys, os, json
mp = os.path.expanduser("~/.cache/deg/models/SmolLM2-135M-Instruct.Q4_1.gguf")
S = lambda **p: {"type": "object", "properties": p}
E = {"type": "string", "format": "email"}; D = {"type": "string", "format": "date"}
EN = {"type": ["string", "null"], "format": "email"}; U = {"type": "string", "format": "uri"}
N = {"type": "integer"}
cases = [
 ("Order 4711 from ann@example.com", S(email=E), {"email": "ann@example.com"}),
 ("Order 4711 from ann@example.com", S(email=EN), {"email": "ann@example.com"}),
 ("Order ORD-1234 from ann@example.com, due 2026-03-05.", S(email=E, due=D), {"email": "ann@example.com", "due": "2026-03-05"}),
 ("Contact: bob.smith@mail.org", S(contact=E), {"contact": "bob.smith@mail.org"}),
 ("Please reply to support@acme.io before Friday.", S(reply_to=E), {"reply_to": "support@acme.io"}),
 ("Invoice 88 sent on 2025-11-02 to carol@firm.de.", S(date=D, recipient=E), {"date": "2025-11-02", "recipient": "carol@firm.de"}),
 ("Homepage: https://example.org/project", S(homepage=U), {"homepage": "https://example.org/project"}),
 ("The meeting is on 2024-01-15 in room 4.", S(date=D, room=N), {"date": "2024-01-15", "room": 4}),
 ("Maintainer: Dan Roe <dan@roe.net>", S(maintainer_email=E), {"maintainer_email": "dan@roe.net"}),
 ("Ticket 12 opened by eve@corp.com", S(opened_by=E, ticket=N), {"opened_by": "eve@corp.com", "ticket": 12}),
 ("Ship to: 12 Main St. Email frank@shop.co for questions.", S(email=E), {"email": "frank@shop.co"}),
 ("Released 2023-07-01. Author: grace@lab.edu", S(released=D, author=E), {"released": "2023-07-01", "author": "grace@lab.edu"}),
]
for c in sys.argv[1:]:
    right = tot = 0
    with deg.load(c, model_path=mp) as ck:
        for ctx, sch, gold in cases:
            v = deg.fill(ctx, sch, model=ck)["value"]
            for k, g in gold.items():
                tot += 1; right += v.get(k) == g
                if v.get(k) != g: print("  miss", os.path.basename(c), repr(ctx[:40]), k, v.get(k))
    print(c, right, "/", tot)
