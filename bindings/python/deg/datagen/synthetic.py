"""Programmatic documents (orders, invoices, tickets, events, listings) with
varied wording: every value is drawn from the record's own RNG, written
through a Doc so its gold span is known, and the schema says what to fill.
"""
import datetime as dt

from .debian import rfc3339
from .doc import Doc

FIRST = ["Ana", "Bruno", "Chen", "Dana", "Elif", "Farid", "Grace", "Hugo", "Ines", "Jonas",
         "Kemal", "Lena", "Marta", "Nils", "Olga", "Pablo", "Quinn", "Rosa", "Sven", "Tariq"]
LAST = ["Alvarez", "Bauer", "Costa", "Dubois", "Eriksen", "Fischer", "Garcia", "Horvat",
        "Ivanova", "Jensen", "Kowalski", "Lambert", "Moreau", "Novak", "Okafor", "Petrov"]
DOMAINS = ["example.com", "mail.example.org", "shop.example.net", "corp.example"]
PRODUCTS = ["USB-C cable", "desk lamp", "wireless mouse", "notebook", "coffee grinder",
            "water bottle", "phone stand", "HDMI adapter", "yoga mat", "backpack",
            "tea kettle", "monitor arm", "label printer", "wool socks", "LED strip"]
CITIES = ["Lisbon", "Tallinn", "Porto", "Ghent", "Graz", "Bergen", "Lyon", "Krakow", "Malmo"]
MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August",
          "September", "October", "November", "December"]
CURRENCIES = ["EUR", "USD", "GBP", "CHF"]
PRIORITY = ["low", "normal", "high", "urgent"]
CATEGORY = ["billing", "shipping", "technical", "account", "other"]


def _person(rng):
    f, l = rng.choice(FIRST), rng.choice(LAST)
    return f"{f} {l}", f"{f.lower()}.{l.lower()}@{rng.choice(DOMAINS)}"


def _date(rng, year=None):
    return dt.date(year or rng.randint(2019, 2026), rng.randint(1, 12), rng.randint(1, 28))


def _date_text(rng, d):
    style = rng.randrange(4)
    if style == 0:
        return d.isoformat()
    if style == 1:
        return f"{MONTHS[d.month - 1]} {d.day}, {d.year}"
    if style == 2:
        return f"{d.day} {MONTHS[d.month - 1][:3]} {d.year}"
    return f"{d.day} {MONTHS[d.month - 1]} {d.year}"


def _money(rng, lo=1, hi=2000):
    cents = rng.randint(lo * 100, hi * 100)
    return cents / 100 if cents % 100 else cents // 100


def _money_text(rng, x):
    if isinstance(x, int) and rng.random() < 0.5:
        return f"{x:,}" if x >= 1000 and rng.random() < 0.5 else str(x)
    return f"{x:,.2f}" if rng.random() < 0.5 else f"{x:.2f}"


def order(rng, template):
    name, email = _person(rng)
    oid = f"{rng.choice('ABCDKQ')}-{rng.randint(1000, 99999)}"
    day = _date(rng)
    cur = rng.choice(CURRENCIES)
    n = rng.randint(0 if template == "receipt" else 1, 4)
    items = []
    for _ in range(n):
        items.append({"product": rng.choice(PRODUCTS), "quantity": rng.randint(1, 9),
                      "unit_price": _money(rng, 2, 300)})
    gift = rng.random() < 0.3
    express = rng.random() < 0.4
    rating = rng.randint(1, 5) if rng.random() < 0.7 else None
    schema = {"type": "object", "properties": {
        "order_id": {"type": "string"},
        "customer_email": {"type": "string", "format": "email"},
        "order_date": {"type": "string", "format": "date"},
        "currency": {"enum": CURRENCIES},
        "gift": {"type": "boolean", "description": "is the order a gift?"},
        "shipping": {"oneOf": [{"const": "express", "description": "fast delivery"},
                               {"const": "standard", "description": "regular delivery"}]},
        "rating": {"type": ["integer", "null"], "minimum": 1, "maximum": 5,
                   "description": "customer rating in stars, if given"},
        "items": {"type": "array", "items": {"type": "object", "properties": {
            "product": {"type": "string"},
            "quantity": {"type": "integer", "minimum": 1},
            "unit_price": {"type": "number", "minimum": 0}},
            "required": ["product", "quantity", "unit_price"]}},
        "coupon": {"type": ["string", "null"], "description": "coupon code, if any"},
        "thank_you_note": {"type": "string", "x-generate": True, "maxLength": 160},
    }, "required": ["order_id", "items"]}
    value = {"order_id": oid, "customer_email": email, "order_date": day.isoformat(),
             "currency": cur, "gift": gift, "shipping": "express" if express else "standard",
             "rating": rating, "items": items, "coupon": None,
             "thank_you_note": f"Thank you for your order, {name.split()[0]}!"}
    d = Doc()
    date_s = _date_text(rng, day)
    coupon = f"SAVE{rng.randint(5, 30)}" if rng.random() < 0.3 else None
    value["coupon"] = coupon
    if template == "receipt":
        d.text("RECEIPT  #").val("/order_id", oid).text("\nDate: ").val("/order_date", date_s)
        d.text(f"\nBilled to: {name} <").val("/customer_email", email).text(f">\nCurrency: {cur}\n\n")
        for i, it in enumerate(items):
            with d.item(f"/items/{i}"):
                d.val(f"/items/{i}/quantity", it["quantity"]).text(" x ")
                d.val(f"/items/{i}/product", it["product"]).text(" @ ")
                d.val(f"/items/{i}/unit_price", _money_text(rng, it["unit_price"])).text("\n")
        if not items:
            d.text("(no items: order cancelled)\n")
        d.text("\nShipping: " + ("EXPRESS" if express else "standard") + "\n")
        if gift:
            d.text("Gift wrap: yes\n")
    elif template == "chat":
        d.text(f"Hi, this is {name}. I placed order ").val("/order_id", oid).text(" on ")
        d.val("/order_date", date_s).text(". ")
        for i, it in enumerate(items):
            with d.item(f"/items/{i}"):
                d.text("I got " if i == 0 else "Also ").val(f"/items/{i}/quantity", it["quantity"])
                d.text(" of the ").val(f"/items/{i}/product", it["product"]).text(" at ")
                d.val(f"/items/{i}/unit_price", _money_text(rng, it["unit_price"])).text(f" {cur} each. ")
        d.text("It was meant as a present for my sister. " if gift else "")
        d.text("I paid for the fast delivery option. " if express else "Regular post is fine. ")
        d.text("You can reach me at ").val("/customer_email", email).text(".")
    else:  # email confirmation
        d.text(f"To: {name} <").val("/customer_email", email).text(">\nSubject: Your order ")
        d.val("/order_id", oid).text(" is confirmed\n\nDear customer,\n\nwe received your order on ")
        d.val("/order_date", date_s).text(f". All prices are in {cur}.\n\n")
        for i, it in enumerate(items):
            with d.item(f"/items/{i}"):
                d.text("- ").val(f"/items/{i}/product", it["product"]).text(", qty ")
                d.val(f"/items/{i}/quantity", it["quantity"]).text(", price ")
                d.val(f"/items/{i}/unit_price", _money_text(rng, it["unit_price"])).text("\n")
        d.text(f"\nDelivery: {'express (1-2 days)' if express else 'standard (3-5 days)'}\n")
        if gift:
            d.text("A gift message will be included.\n")
    if coupon:
        d.text("\nCoupon applied: ").val("/coupon", coupon).text("\n")
    if rating is not None:
        d.text(f"\nCustomer review: {'*' * rating}{'.' * (5 - rating)} ({rating}/5)\n")
    return d, schema, value, None


def invoice(rng, template):
    vendor, vemail = _person(rng)
    num = f"INV-{rng.randint(2019, 2026)}-{rng.randint(100, 9999):04d}"
    issued = _date(rng)
    due = issued + dt.timedelta(days=rng.choice([14, 30, 45, 60]))
    lines = [{"description": rng.choice(PRODUCTS), "amount": _money(rng, 5, 900)}
             for _ in range(rng.randint(1, 4))]
    tax = _money(rng, 1, 200) if rng.random() < 0.6 else None
    paid = rng.random() < 0.35
    url = f"https://pay.{rng.choice(DOMAINS)}/i/{rng.randint(10000, 99999)}"
    schema = {"type": "object", "properties": {
        "invoice_number": {"type": "string"},
        "issue_date": {"type": "string", "format": "date"},
        "due_date": {"type": "string", "format": "date"},
        "vendor_email": {"type": "string", "format": "email"},
        "payment_link": {"type": "string", "format": "uri"},
        "tax": {"type": ["number", "null"]},
        "paid": {"type": "boolean"},
        "status": {"enum": ["draft", "sent", "overdue", "paid"]},
        "lines": {"type": "array", "items": {"type": "object", "properties": {
            "description": {"type": "string"}, "amount": {"type": "number"}},
            "required": ["description", "amount"]}},
    }, "required": ["invoice_number", "lines"]}
    status = "paid" if paid else rng.choice(["sent", "overdue"])
    value = {"invoice_number": num, "issue_date": issued.isoformat(), "due_date": due.isoformat(),
             "vendor_email": vemail, "payment_link": url, "tax": tax, "paid": paid,
             "status": status, "lines": lines}
    d = Doc()
    if template == "formal":
        d.text("INVOICE ").val("/invoice_number", num).text("\nIssued: ").val("/issue_date", _date_text(rng, issued))
        d.text("\nPayment due: ").val("/due_date", _date_text(rng, due)).text(f"\nFrom: {vendor} <")
        d.val("/vendor_email", vemail).text(">\n\n")
        for i, ln in enumerate(lines):
            with d.item(f"/lines/{i}"):
                d.val(f"/lines/{i}/description", ln["description"]).text(" .......... ")
                d.val(f"/lines/{i}/amount", _money_text(rng, ln["amount"])).text("\n")
        if tax is not None:
            d.text("VAT: ").val("/tax", _money_text(rng, tax)).text("\n")
        d.text({"paid": "\nStatus: PAID, thank you.", "sent": "\nStatus: awaiting payment.",
                "overdue": "\nStatus: OVERDUE - please pay immediately."}[status])
        d.text("\nPay online: ").val("/payment_link", url)
    else:  # reminder e-mail
        d.text(f"Hello,\n\nthis is {vendor} (").val("/vendor_email", vemail).text("). Invoice ")
        d.val("/invoice_number", num).text(" from ").val("/issue_date", _date_text(rng, issued))
        d.text(" covers:\n")
        for i, ln in enumerate(lines):
            with d.item(f"/lines/{i}"):
                d.text("  ").val(f"/lines/{i}/amount", _money_text(rng, ln["amount"])).text(" for ")
                d.val(f"/lines/{i}/description", ln["description"]).text("\n")
        if tax is not None:
            d.text("plus tax of ").val("/tax", _money_text(rng, tax)).text(".\n")
        d.text({"paid": "We have received your payment, nothing more is needed.",
                "sent": "It is due on ", "overdue": "It was due on "}[status])
        if status != "paid":
            d.val("/due_date", _date_text(rng, due))
            d.text(" and is now overdue." if status == "overdue" else ".")
        else:
            d.text(" (It was due on ").val("/due_date", _date_text(rng, due)).text(".)")
        d.text("\nYou can pay here: ").val("/payment_link", url).text("\n\nBest regards")
    return d, schema, value, None


_HEDGED = {"asap": ({"urgent": 0.8, "high": 0.2}), "when you can": ({"low": 0.6, "normal": 0.4})}


def ticket(rng, template):
    name, email = _person(rng)
    tid = rng.randint(10000, 999999)
    cat = rng.choice(CATEGORY)
    sev = rng.randint(1, 5)
    created = dt.datetime(rng.randint(2020, 2026), rng.randint(1, 12), rng.randint(1, 28),
                          rng.randint(0, 23), rng.randint(0, 59),
                          tzinfo=dt.timezone(dt.timedelta(hours=rng.choice([-5, 0, 1, 2, 9]))))
    hedge = rng.choice([None, None, "asap", "when you can"])
    if hedge:
        dist = _HEDGED[hedge]
        prio = max(dist, key=dist.get)
    else:
        prio, dist = rng.choice(PRIORITY), None
    assignee = rng.choice(FIRST) if rng.random() < 0.5 else None
    resolved = rng.random() < 0.3
    schema = {"type": "object", "properties": {
        "ticket_id": {"type": "integer", "minimum": 1},
        "reporter_email": {"type": "string", "format": "email"},
        "created": {"type": "string", "format": "date-time"},
        "category": {"enum": CATEGORY},
        "priority": {"enum": PRIORITY},
        "severity": {"type": "integer", "minimum": 1, "maximum": 5,
                     "x-levels": {"1": "cosmetic", "5": "outage"}},
        "resolved": {"type": "boolean"},
        "assignee": {"type": ["string", "null"]},
        "reply": {"type": "string", "x-generate": True, "maxLength": 200,
                  "description": "a short first reply to the reporter"},
    }, "required": ["ticket_id", "category"]}
    value = {"ticket_id": tid, "reporter_email": email, "created": rfc3339(created),
             "category": cat, "priority": prio, "severity": sev, "resolved": resolved,
             "assignee": assignee,
             "reply": f"Hi {name.split()[0]}, thanks for reporting this {cat} issue; we are on it."}
    issue = {"billing": "I was charged twice this month", "shipping": "my parcel never arrived",
             "technical": "the app crashes when I open settings", "account": "I cannot log in",
             "other": "I have a question about your opening hours"}[cat]
    sev_word = ["barely noticeable", "annoying", "a real problem", "blocking my work",
                "a complete outage"][sev - 1]
    ts = created.strftime(rng.choice(["%Y-%m-%d %H:%M:%S %z", "%d %b %Y %H:%M %z",
                                      "%Y-%m-%dT%H:%M:%S%z"]))
    if ts[-5] in "+-" and "T" in ts:
        ts = ts[:-2] + ":" + ts[-2:]
    d = Doc()
    if template == "helpdesk":
        d.text("Ticket #").val("/ticket_id", tid).text("  opened ").val("/created", ts)
        d.text(f"\nQueue: {cat}\nPriority: {prio if not hedge else 'unset'}\nReporter: ")
        d.val("/reporter_email", email).text(f"\nState: {'closed' if resolved else 'open'}\n")
        if assignee:
            d.text("Assigned to: ").val("/assignee", assignee).text("\n")
        d.text(f"\n{issue}. It is {sev_word}.")
        if hedge:
            d.text(f" Please look at it {hedge}.")
    elif template == "email":
        d.text(f"From: {name} <").val("/reporter_email", email).text(">\nDate: ").val("/created", ts)
        d.text("\nSubject: Re: case ").val("/ticket_id", tid).text("\n\nHello support,\n\n")
        d.text(f"{issue}. Honestly it is {sev_word}. ")
        d.text({"low": "No rush.", "normal": "", "high": "Please prioritise this.",
                "urgent": "This is URGENT."}[prio] if not hedge else f"Could you handle it {hedge}?")
        if resolved:
            d.text("\n\nUpdate: never mind, it works again now.")
        if assignee:
            d.text("\n\n(").val("/assignee", assignee).text(" from your team already replied once.)")
    else:  # log
        d.text("[").val("/created", ts).text("] NEW ticket=").val("/ticket_id", tid)
        d.text(f" cat={cat} sev={sev}/5 prio={prio}\n[")
        d.text(ts + "] reporter=").val("/reporter_email", email).text("\n")
        if assignee:
            d.text("[" + ts + "] ASSIGN ").val("/assignee", assignee).text("\n")
        if resolved:
            d.text("[" + ts + "] RESOLVED\n")
    probs = None
    if dist:
        probs = {"/priority": [dist.get(p, 0.0) for p in PRIORITY]}
    return d, schema, value, probs


def event(rng, template):
    title = rng.choice(["Spring Meetup", "Open Data Day", "Jazz Night", "Rust Workshop",
                        "Book Fair", "Board Games Evening", "Charity Run"])
    city = rng.choice(CITIES)
    start = dt.datetime(rng.randint(2024, 2027), rng.randint(1, 12), rng.randint(1, 28),
                        rng.randint(8, 21), rng.choice([0, 15, 30, 45]))
    url = f"https://events.{rng.choice(DOMAINS)}/{title.lower().replace(' ', '-')}"
    cap = rng.choice([None, rng.randint(20, 800)])
    free = rng.random() < 0.4
    price = None if free else _money(rng, 5, 90)
    speakers = [_person(rng) for _ in range(rng.randint(0, 3))]
    schema = {"type": "object", "properties": {
        "title": {"type": "string"},
        "city": {"type": "string"},
        "starts": {"type": "string", "format": "date-time"},
        "url": {"type": "string", "format": "uri"},
        "capacity": {"type": ["integer", "null"]},
        "free": {"type": "boolean"},
        "ticket_price": {"type": ["number", "null"]},
        "kind": {"enum": ["concert", "workshop", "meetup", "fair", "sport", "other"]},
        "speakers": {"type": "array", "items": {"type": "object", "properties": {
            "name": {"type": "string"}, "email": {"type": ["string", "null"], "format": "email"}},
            "required": ["name"]}},
    }, "required": ["title", "starts"]}
    kind = {"Spring Meetup": "meetup", "Open Data Day": "meetup", "Jazz Night": "concert",
            "Rust Workshop": "workshop", "Book Fair": "fair", "Board Games Evening": "other",
            "Charity Run": "sport"}[title]
    value = {"title": title, "city": city, "starts": rfc3339(start), "url": url, "capacity": cap,
             "free": free, "ticket_price": price, "kind": kind,
             "speakers": [{"name": n, "email": e if k % 2 == 0 else None}
                          for k, (n, e) in enumerate(speakers)]}
    d = Doc()
    st = start.strftime(rng.choice(["%Y-%m-%d %H:%M", "%d %B %Y %H:%M", "%B %d, %Y %H:%M"]))
    d.text("Join us for ").val("/title", title).text(" in ").val("/city", city).text(" on ")
    d.val("/starts", st).text(". ")
    d.text("Entry is free! " if free else "Tickets cost ")
    if not free:
        d.val("/ticket_price", _money_text(rng, price)).text(" EUR. ")
    if cap:
        d.text("Only ").val("/capacity", cap).text(" places. ")
    for k, (n, e) in enumerate(speakers):
        with d.item(f"/speakers/{k}"):
            d.text("Speaker: ").val(f"/speakers/{k}/name", n)
            if k % 2 == 0:
                d.text(" (").val(f"/speakers/{k}/email", e).text(")")
            d.text(". ")
    d.text("Details: ").val("/url", url)
    return d, schema, value, None


def listing(rng, template):
    beds = rng.randint(0, 6)
    rent = rng.randint(400, 4000)
    city = rng.choice(CITIES)
    name, email = _person(rng)
    pets = rng.random() < 0.5
    area = rng.randint(20, 180)
    avail = _date(rng, rng.randint(2025, 2027))
    schema = {"type": "object", "properties": {
        "city": {"type": "string"},
        "bedrooms": {"type": "integer", "minimum": 0, "maximum": 10},
        "rent": {"type": "number"},
        "area_m2": {"type": ["number", "null"]},
        "pets_allowed": {"type": "boolean"},
        "available_from": {"type": "string", "format": "date"},
        "contact_email": {"type": "string", "format": "email"},
        "furnished": {"enum": [True, False, None]},
    }, "required": ["city", "rent"]}
    furnished = rng.choice([True, False, None])
    value = {"city": city, "bedrooms": beds, "rent": rent, "area_m2": area if rng.random() < 0.7 else None,
             "pets_allowed": pets, "available_from": avail.isoformat(), "contact_email": email,
             "furnished": furnished}
    d = Doc()
    d.text(f"{'Studio' if beds == 0 else str(beds) + '-bedroom flat'} in ").val("/city", city)
    d.text(" for ").val("/rent", f"{rent:,}" if rent >= 1000 else rent).text(" per month. ")
    if value["area_m2"] is not None:
        d.val("/area_m2", area).text(" m2. ")
    d.text("Pets welcome. " if pets else "Sorry, no pets. ")
    d.text({True: "Fully furnished. ", False: "Unfurnished. ", None: ""}[furnished])
    d.text("Available from ").val("/available_from", _date_text(rng, avail)).text(". Write to ")
    d.val("/contact_email", email).text(".")
    return d, schema, value, None


# (source name, generator, templates); the last template of each source is
# held out for test, and whole sources in HELD_OUT_SOURCES are test-only.
SOURCES = {
    "order": (order, ["receipt", "chat", "email"]),
    "invoice": (invoice, ["formal", "reminder"]),
    "ticket": (ticket, ["helpdesk", "email", "log"]),
    "event": (event, ["announcement"]),
    "listing": (listing, ["classified"]),
}
