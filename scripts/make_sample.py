"""Write the bundled sample dataset, ``examples/sample/*.jsonl`` (deterministic).

    python scripts/make_sample.py            # rewrites examples/sample/

A few hundred conversations in the shapes ``ocml pack`` reads, with realistic content:

- ``chat.jsonl``: OpenAI / HF chat dicts: system prompts, multi-turn, ``tools`` with
  ``tool_calls`` and ``tool`` results (``tool_call_id``), ``reasoning_content``; and five
  malformed records (a bad role, a line that is not JSON, tool arguments that are not
  JSON, no messages, a typo'd key) that the report lists by line;
- ``harmony.jsonl``: openai-harmony ``Conversation.to_json()`` records;
- ``canonical.jsonl``: canonical dicts with channels (the formats' own terms);
- ``sharegpt.jsonl``: ShareGPT ``conversations`` with ``from`` / ``value``.

Tool results are computed (fixed exchange rates, a seeded weather table), so every answer
agrees with its tool output; word problems carry their worked reasoning.
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

OUT = Path(__file__).resolve().parent.parent / "examples" / "sample"
SEED = 20250314

SYSTEMS = [
    "You are a helpful assistant.",
    "You are a concise assistant for a software company's internal help desk. Answer in plain language and "
    "say when you are not sure.",
    "You are a friendly cooking assistant. Prefer metric units and mention substitutions for common allergens.",
    "You are a travel planning assistant. Use the tools for live data; never invent prices or forecasts.",
    "You are a patient math tutor. Show the steps, then give the answer on its own line.",
    "You are a senior Python reviewer. Point out bugs first, then style.",
]

# (question, answer) pairs written for the sample; answers of varied length.
QA = [
    ("What is the difference between a list and a tuple in Python?",
     "Both are ordered sequences, but a list is mutable and a tuple is not.\n\n- Use a **list** when the "
     "collection changes: you append, remove or sort items.\n- Use a **tuple** for a fixed record, such as a "
     "pair of coordinates `(x, y)` or a row from a database.\n\nBecause tuples are immutable they are hashable "
     "(if their items are), so they can be dictionary keys or set members; lists cannot."),
    ("How long should I boil an egg for a runny yolk?",
     "Lower a fridge-cold egg into water that is already boiling and cook it for 6 minutes, then move it to "
     "cold water for a minute so it stops cooking. For a jammy yolk, go to 7 minutes; for hard-boiled, 9 to 10."),
    ("Why is the sky blue?",
     "Sunlight contains every colour. As it passes through the atmosphere, it scatters off nitrogen and oxygen "
     "molecules, and shorter wavelengths scatter far more than longer ones (Rayleigh scattering is roughly "
     "proportional to 1/wavelength^4). Blue light is scattered across the whole sky, so wherever you look away "
     "from the Sun you see that scattered blue. Violet scatters even more, but the Sun emits less of it and our "
     "eyes are less sensitive to it. At sunset the light crosses much more air, the blue is scattered out of the "
     "direct beam, and the remaining light looks orange and red."),
    ("Can you explain what a git rebase does?",
     "`git rebase main` takes the commits on your branch that are not on `main`, sets them aside, moves your "
     "branch to the tip of `main`, and replays your commits one by one on top.\n\nThe result is the same changes "
     "with a linear history, but the replayed commits are *new* commits with new hashes. That is why you should "
     "not rebase commits that others have already pulled: their copies would no longer match yours.\n\nUse "
     "`git rebase -i` to reorder, squash or edit commits while replaying them, and `git rebase --abort` if a "
     "conflict gets confusing."),
    ("What's a good substitute for buttermilk?",
     "Stir 1 tablespoon of lemon juice or white vinegar into a cup (240 ml) of milk and let it stand for 5 to 10 "
     "minutes until it thickens slightly. Plain yoghurt thinned with a little milk (3:1) also works well in "
     "pancakes and scones."),
    ("How do I undo the last commit but keep my changes?",
     "Run `git reset --soft HEAD~1`. The commit is removed, and its changes stay staged. Use `git reset HEAD~1` "
     "(mixed) if you want them unstaged instead. If you already pushed the commit, prefer `git revert HEAD`, "
     "which adds a new commit that undoes it without rewriting history."),
    ("What is the capital of Australia?",
     "Canberra. It was chosen in 1908 as a compromise between Sydney and Melbourne and has been the seat of "
     "government since 1927."),
    ("Summarise the causes of the 2008 financial crisis in a paragraph.",
     "The crisis grew out of a US housing boom financed by risky mortgages. Lenders issued loans to borrowers "
     "with weak credit, often with low introductory rates, and banks bundled these loans into mortgage-backed "
     "securities and more complex derivatives that rating agencies scored as safe. Financial firms held large "
     "amounts of these assets with very high leverage and relied on short-term funding. When house prices "
     "started falling in 2006-2007 and defaults rose, the value of the securities became uncertain, short-term "
     "lenders pulled back, and institutions such as Bear Stearns and Lehman Brothers failed or had to be rescued. "
     "The resulting freeze in credit spread to the wider economy and to other countries."),
    ("Is it safe to put a cast iron pan in the dishwasher?",
     "No. The detergent and long soak strip the seasoning and the pan will rust. Wash it by hand with hot water "
     "(a little soap is fine), dry it immediately on the hob, and wipe a thin film of oil over it while warm."),
    ("What does HTTP status 429 mean?",
     "429 Too Many Requests: the server is rate-limiting you. Slow down and retry later; if the response has a "
     "`Retry-After` header, wait that many seconds (or until that date) before the next request. Exponential "
     "backoff with jitter is the usual client-side strategy."),
    ("Write a haiku about autumn rain.",
     "Cold rain on the roof\nthe maple lets go its last\nred hand to the street"),
    ("How many minutes should I rest a steak?",
     "About 5 minutes for a thin steak and up to 10 for a thick one, loosely covered. A common rule is to rest "
     "it for roughly half the cooking time."),
    ("Explain the difference between TCP and UDP.",
     "TCP is connection-oriented: it sets up a session, numbers every byte, retransmits what is lost and "
     "delivers data in order, with flow and congestion control. That makes it reliable but adds latency.\n\n"
     "UDP just sends independent datagrams. There is no handshake, no retransmission and no ordering, so "
     "packets can be lost, duplicated or reordered, but overhead and latency are minimal. It suits DNS lookups, "
     "voice and video calls, and games, where a late packet is useless anyway; QUIC builds reliability on top "
     "of UDP in user space."),
    ("What is a good first houseplant?",
     "A pothos or a snake plant. Both tolerate low light and irregular watering: water the pothos when the top "
     "few centimetres of soil are dry, and the snake plant only every two to four weeks."),
    ("Translate 'Where is the train station?' into Spanish, French and German.",
     "- Spanish: ¿Dónde está la estación de tren?\n- French: Où est la gare ?\n- German: Wo ist der Bahnhof?"),
    ("How do I find which process is using port 8080 on Linux?",
     "Use `sudo ss -ltnp 'sport = :8080'` or `sudo lsof -i :8080`. Both show the PID and the program name; "
     "then `kill PID` if you want to stop it."),
    ("What is the difference between affect and effect?",
     "Usually *affect* is the verb (\"the weather affected our plans\") and *effect* is the noun (\"the effect "
     "was a two-hour delay\"). Less commonly, *effect* as a verb means to bring about (\"to effect change\")."),
    ("Why does my sourdough come out dense?",
     "The usual causes are an underactive starter, under-proofing, or too little gluten development.\n\n1. Feed "
     "the starter and use it at its peak, when it has roughly doubled and smells pleasantly sour.\n2. Let the "
     "bulk ferment go until the dough has risen by 50 to 75 percent and looks airy at the edges; in a cool "
     "kitchen this can take 8 hours or more.\n3. Do a few sets of stretch-and-folds in the first two hours.\n4. "
     "Bake hot (230-250 °C) with steam for the first 20 minutes so the loaf can expand before the crust sets."),
]

FOLLOW_UPS = [
    ("Thanks! Can you make that shorter?", "Sure. In one sentence: {short}"),
    ("Could you give me an example?", "Here is a small example:\n\n{example}"),
    ("Great, that's all I needed.", "Glad it helped. Feel free to ask if anything else comes up."),
]
SHORT = {
    0: "lists can change, tuples cannot, and only tuples can be dict keys.",
    3: "rebase replays your commits on top of another branch, giving new commits with a linear history.",
    5: "`git reset --soft HEAD~1` removes the commit and keeps its changes staged.",
    12: "TCP is reliable and ordered, UDP is fast and fire-and-forget.",
}
EXAMPLE = {
    0: "```python\npoint = (3, 4)          # tuple: a fixed pair\nvisited = {point}      # hashable, so it can go in a set\n"
       "path = [point]         # list: grows as we walk\npath.append((4, 4))\n```",
    3: "```\ngit switch feature\ngit fetch origin\ngit rebase origin/main\n# fix conflicts, then\ngit add -A && "
       "git rebase --continue\n```",
    15: "```\n$ sudo ss -ltnp 'sport = :8080'\nLISTEN 0 4096 *:8080 *:* users:((\"java\",pid=41237,fd=112))\n"
        "$ kill 41237\n```",
}

CODE_REVIEWS = [
    ("def average(xs):\n    return sum(xs) / len(xs)",
     "This raises `ZeroDivisionError` on an empty list. Decide what an empty input means and handle it "
     "explicitly:\n\n```python\ndef average(xs: list[float]) -> float:\n    if not xs:\n        raise "
     "ValueError(\"average of an empty list\")\n    return sum(xs) / len(xs)\n```\n\nIf you prefer a default, "
     "`statistics.fmean(xs)` raises `StatisticsError` for empty data too, so the check is still worth having."),
    ("def add_item(item, items=[]):\n    items.append(item)\n    return items",
     "The default list is created once, when the function is defined, so every call without `items` appends to "
     "the same list and results leak between calls. Use `None` as the default:\n\n```python\ndef add_item(item, "
     "items=None):\n    if items is None:\n        items = []\n    items.append(item)\n    return items\n```"),
    ("for i in range(len(names)):\n    print(i, names[i])",
     "It works, but `enumerate` says what you mean and avoids indexing:\n\n```python\nfor i, name in "
     "enumerate(names):\n    print(i, name)\n```"),
    ("with open(path) as f:\n    data = f.read().split('\\n')",
     "`f.read().split('\\n')` leaves an empty string at the end when the file ends with a newline, and it reads "
     "the whole file into memory. Iterate over the file instead, and pass an encoding explicitly:\n\n```python\n"
     "with open(path, encoding=\"utf-8\") as f:\n    lines = [line.rstrip(\"\\n\") for line in f]\n```"),
    ("try:\n    value = int(text)\nexcept:\n    value = 0",
     "A bare `except:` also catches `KeyboardInterrupt` and `SystemExit`, and hides real bugs. Catch only what "
     "`int()` raises for bad input:\n\n```python\ntry:\n    value = int(text)\nexcept ValueError:\n    value = 0\n```"),
]

CITIES = {"Lisbon": (17, 24), "Oslo": (-4, 9), "Tokyo": (6, 19), "Nairobi": (15, 26), "Denver": (-2, 16),
          "Singapore": (25, 31), "Edinburgh": (3, 12), "Buenos Aires": (11, 22), "Montreal": (-9, 8),
          "Cape Town": (12, 23)}
CONDITIONS = ["sunny", "partly cloudy", "overcast", "light rain", "showers", "clear", "windy", "foggy"]
RATES_TO_USD = {"USD": 1.0, "EUR": 1.08, "GBP": 1.27, "JPY": 0.0067, "CAD": 0.74, "CHF": 1.12, "INR": 0.012}

TOOLS = {
    "get_weather": {"type": "function", "function": {
        "name": "get_weather", "description": "Current weather for a city.",
        "parameters": {"type": "object", "properties": {
            "city": {"type": "string", "description": "City name, e.g. Lisbon"},
            "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}}, "required": ["city"]}}},
    "convert_currency": {"type": "function", "function": {
        "name": "convert_currency", "description": "Convert an amount between currencies at today's rate.",
        "parameters": {"type": "object", "properties": {
            "amount": {"type": "number"}, "from": {"type": "string", "description": "ISO 4217 code"},
            "to": {"type": "string", "description": "ISO 4217 code"}}, "required": ["amount", "from", "to"]}}},
    "create_event": {"type": "function", "function": {
        "name": "create_event", "description": "Add an event to the user's calendar.",
        "parameters": {"type": "object", "properties": {
            "title": {"type": "string"}, "start": {"type": "string", "description": "ISO 8601 date-time"},
            "duration_minutes": {"type": "integer"}}, "required": ["title", "start"]}}},
}

MEETINGS = ["Dentist appointment", "1:1 with Priya", "Quarterly planning", "Call with the landlord",
            "Team retro", "Yoga class", "Parent-teacher meeting", "Flight check-in reminder"]


def weather(rng: random.Random, city: str, unit: str) -> dict[str, Any]:
    lo, hi = CITIES[city]
    c = rng.randint(lo, hi)
    temp = c if unit == "celsius" else round(c * 9 / 5 + 32)
    return {"city": city, "temperature": temp, "unit": unit, "condition": rng.choice(CONDITIONS),
            "humidity": rng.randint(35, 90)}


def convert(amount: float, src: str, dst: str) -> float:
    return round(amount * RATES_TO_USD[src] / RATES_TO_USD[dst], 2)


def call(cid: str, name: str, args: dict[str, Any]) -> dict[str, Any]:
    return {"id": cid, "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}


def weather_chat(rng: random.Random, k: int) -> dict[str, Any]:
    cities = rng.sample(sorted(CITIES), rng.choice([1, 1, 2]))
    unit = rng.choice(["celsius", "celsius", "fahrenheit"])
    sym = "°C" if unit == "celsius" else "°F"
    q = (f"What's the weather like in {cities[0]} right now?" if len(cities) == 1
         else f"Should I pack an umbrella? I'm going from {cities[0]} to {cities[1]} today.")
    if unit == "fahrenheit":
        q += " In Fahrenheit please."
    msgs: list[dict[str, Any]] = [{"role": "system", "content": SYSTEMS[3]}, {"role": "user", "content": q}]
    calls = [call(f"call_w{k}_{i}", "get_weather", {"city": c, "unit": unit}) for i, c in enumerate(cities)]
    reasoning = (f"The user wants current conditions for {' and '.join(cities)}; I need the weather tool "
                 f"{'once per city' if len(cities) > 1 else ''} in {unit}.").replace("  ", " ")
    msgs.append({"role": "assistant", "content": None, "reasoning_content": reasoning, "tool_calls": calls})
    results = [weather(rng, c, unit) for c in cities]
    for c, r in zip(calls, results):
        msgs.append({"role": "tool", "tool_call_id": c["id"], "content": json.dumps(r)})
    parts = [f"{r['city']}: {r['temperature']}{sym}, {r['condition']}, humidity {r['humidity']}%." for r in results]
    wet = [r["city"] for r in results if "rain" in r["condition"] or "showers" in r["condition"]]
    advice = (f"Yes, take an umbrella: it's wet in {', '.join(wet)}." if wet else
              "No rain in the forecast right now, so you can leave the umbrella at home.") if len(cities) > 1 else ""
    msgs.append({"role": "assistant", "content": " ".join(parts) + (" " + advice if advice else "")})
    return {"messages": msgs, "tools": [TOOLS["get_weather"]]}


def currency_chat(rng: random.Random, k: int) -> dict[str, Any]:
    src, dst = rng.sample(sorted(RATES_TO_USD), 2)
    amount = rng.choice([20, 75, 120, 250, 999.99, 1500, 40000])
    result = convert(amount, src, dst)
    msgs: list[dict[str, Any]] = [
        {"role": "user", "content": rng.choice([f"How much is {amount} {src} in {dst}?",
                                                f"Convert {amount} {src} to {dst} for me",
                                                f"I have {amount} {src}. What's that in {dst} today?"])},
        {"role": "assistant", "content": None,
         "tool_calls": [call(f"call_c{k}", "convert_currency", {"amount": amount, "from": src, "to": dst})]},
        {"role": "tool", "tool_call_id": f"call_c{k}",
         "content": json.dumps({"amount": amount, "from": src, "to": dst, "result": result,
                                "rate": round(RATES_TO_USD[src] / RATES_TO_USD[dst], 6)})},
        {"role": "assistant", "content": f"{amount:,} {src} is about {result:,.2f} {dst} at today's rate."},
    ]
    if rng.random() < 0.4:
        back = convert(result, dst, src)
        msgs += [{"role": "user", "content": "And if I change it back?"},
                 {"role": "assistant", "content": None,
                  "tool_calls": [call(f"call_c{k}b", "convert_currency", {"amount": result, "from": dst, "to": src})]},
                 {"role": "tool", "tool_call_id": f"call_c{k}b",
                  "content": json.dumps({"amount": result, "from": dst, "to": src, "result": back})},
                 {"role": "assistant", "content": f"You'd get {back:,.2f} {src} back, before any exchange fees."}]
    return {"messages": msgs, "tools": [TOOLS["convert_currency"], TOOLS["get_weather"]]}


def calendar_chat(rng: random.Random, k: int) -> dict[str, Any]:
    title = rng.choice(MEETINGS)
    day, hour = rng.randint(1, 28), rng.choice([8, 9, 10, 13, 14, 15, 16, 17])
    dur = rng.choice([15, 30, 45, 60, 90])
    start = f"2025-07-{day:02d}T{hour:02d}:00:00"
    user = f"Put '{title}' in my calendar on July {day} at {hour}:00 for {dur} minutes."
    args = {"title": title, "start": start, "duration_minutes": dur}
    return {"messages": [
        {"role": "system", "content": "You manage the user's calendar. Confirm what you scheduled."},
        {"role": "user", "content": user},
        {"role": "assistant", "content": None, "reasoning_content": f"Create the event at {start}, {dur} min.",
         "tool_calls": [call(f"call_e{k}", "create_event", args)]},
        {"role": "tool", "tool_call_id": f"call_e{k}", "content": json.dumps({"status": "created",
                                                                              "event_id": f"evt_{4100 + k}"})},
        {"role": "assistant", "content": f"Done: '{title}' is on your calendar for July {day}, {hour}:00-"
                                         f"{(hour * 60 + dur) // 60}:{(hour * 60 + dur) % 60:02d}."},
    ], "tools": [TOOLS["create_event"]]}


def word_problem(rng: random.Random) -> tuple[str, str, str]:
    kind = rng.randrange(3)
    if kind == 0:
        d, v = rng.choice([120, 180, 240, 300, 450]), rng.choice([60, 75, 80, 90])
        q = f"A train travels {d} km at an average speed of {v} km/h. How long does the trip take?"
        h, m = divmod(round(d / v * 60), 60)
        r = f"time = distance / speed = {d} / {v} = {d / v:.4g} h = {h} h {m} min."
        return q, r, f"The trip takes {h} h {m:02d} min ({d} km ÷ {v} km/h)."
    if kind == 1:
        price, pct = rng.choice([40, 64, 85, 120, 249]), rng.choice([10, 15, 20, 25, 30])
        q = f"A jacket costs ${price} and is {pct}% off. What is the sale price?"
        sale = price * (100 - pct) / 100
        r = f"discount = {price} × {pct}/100 = {price * pct / 100:g}; sale = {price} - {price * pct / 100:g} = {sale:g}."
        return q, r, f"The sale price is ${sale:.2f}."
    a, b = rng.randint(3, 9), rng.randint(2, 6)
    q = f"Maria has {a} boxes with {b} apples each and gives away {b + 1} apples. How many are left?"
    r = f"{a} × {b} = {a * b} apples; {a * b} - {b + 1} = {a * b - b - 1}."
    return q, r, f"She has {a * b - b - 1} apples left."


def qa_chat(rng: random.Random, i: int) -> dict[str, Any]:
    q, a = QA[i % len(QA)]
    msgs: list[dict[str, Any]] = []
    if rng.random() < 0.6:
        msgs.append({"role": "system", "content": rng.choice(SYSTEMS[:3])})
    msgs += [{"role": "user", "content": q}, {"role": "assistant", "content": a}]
    j = i % len(QA)
    if j in SHORT and rng.random() < 0.5:
        msgs += [{"role": "user", "content": FOLLOW_UPS[0][0]},
                 {"role": "assistant", "content": FOLLOW_UPS[0][1].format(short=SHORT[j])}]
    if j in EXAMPLE and rng.random() < 0.6:
        msgs += [{"role": "user", "content": FOLLOW_UPS[1][0]},
                 {"role": "assistant", "content": FOLLOW_UPS[1][1].format(example=EXAMPLE[j])}]
    if rng.random() < 0.3:
        q2, a2 = QA[rng.randrange(len(QA))]
        msgs += [{"role": "user", "content": "One more question: " + q2[0].lower() + q2[1:]},
                 {"role": "assistant", "content": a2}]
    if rng.random() < 0.2:
        msgs += [{"role": "user", "content": FOLLOW_UPS[2][0]}, {"role": "assistant", "content": FOLLOW_UPS[2][1]}]
    return {"messages": msgs}


def math_chat(rng: random.Random) -> dict[str, Any]:
    msgs: list[dict[str, Any]] = [{"role": "system", "content": SYSTEMS[4]}]
    for _ in range(rng.choice([1, 1, 2, 3])):
        q, r, a = word_problem(rng)
        msgs += [{"role": "user", "content": q}, {"role": "assistant", "content": a, "reasoning_content": r}]
    return {"messages": msgs}


def review_chat(rng: random.Random, i: int) -> dict[str, Any]:
    code, review = CODE_REVIEWS[i % len(CODE_REVIEWS)]
    return {"messages": [{"role": "system", "content": SYSTEMS[5]},
                         {"role": "user", "content": f"Can you review this?\n\n```python\n{code}\n```"},
                         {"role": "assistant", "content": review}]}


def malformed(k: int) -> str:
    """Five realistic mistakes, one per kind (returned as the raw JSONL line)."""
    if k == 0:  # a role no format has
        return json.dumps({"messages": [{"role": "customer", "content": "My order #5521 never arrived."},
                                        {"role": "assistant", "content": "I'm sorry to hear that."}]})
    if k == 1:  # a line cut off mid-record (not JSON)
        return '{"messages": [{"role": "user", "content": "What is the boiling point of water at alti'
    if k == 2:  # tool arguments that are not JSON
        return json.dumps({"messages": [
            {"role": "user", "content": "Weather in Oslo?"},
            {"role": "assistant", "content": None, "tool_calls": [
                {"id": "call_bad", "type": "function", "function": {"name": "get_weather",
                                                                    "arguments": "{city: Oslo}"}}]},
            {"role": "tool", "tool_call_id": "call_bad", "content": "{\"error\": \"bad arguments\"}"}],
            "tools": [TOOLS["get_weather"]]})
    if k == 3:  # no messages at all
        return json.dumps({"id": "conv-0193", "source": "support-export", "created": "2025-02-11"})
    return json.dumps({"messages": [{"role": "user", "contnet": "How do I reset my password?"},  # typo'd key
                                    {"role": "assistant", "content": "Use the 'Forgot password' link."}]})


def session_chat(rng: random.Random, i: int) -> dict[str, Any]:
    """A long working session: many questions, code reviews and tool calls in one conversation
    (a few run past 2,048 tokens, so packing has documents to split)."""
    msgs: list[dict[str, Any]] = [{"role": "system", "content": SYSTEMS[1]}]
    tools: dict[str, Any] = {}
    for t in range(rng.randint(8, 30)):
        pick = rng.random()
        if pick < 0.55:
            q, a = QA[rng.randrange(len(QA))]
            msgs += [{"role": "user", "content": q}, {"role": "assistant", "content": a}]
        elif pick < 0.8:
            code, review = CODE_REVIEWS[rng.randrange(len(CODE_REVIEWS))]
            msgs += [{"role": "user", "content": f"Another one:\n\n```python\n{code}\n```"},
                     {"role": "assistant", "content": review}]
        else:
            sub = weather_chat(rng, 1000 * i + t)
            msgs += sub["messages"][1:]  # its own system prompt is not repeated mid-session
            tools["get_weather"] = TOOLS["get_weather"]
    rec: dict[str, Any] = {"messages": msgs}
    if tools:
        rec["tools"] = list(tools.values())
    return rec


def chat_records(rng: random.Random, n: int = 255, malformed_lines: tuple[int, ...] = (17, 58, 121, 190, 233)
                 ) -> list[str]:
    """``n`` chat records as JSONL lines, with the malformed ones inserted at ``malformed_lines``
    (1-based; ``scripts/bench_pipeline.py`` generates clean data at scale with ``()``)."""
    out: list[str] = []
    makers = (["qa"] * 9 + ["weather"] * 4 + ["currency"] * 3 + ["calendar"] * 2 + ["math"] * 4 + ["review"] * 2
              + ["session"] * 2)
    for i in range(n):
        kind = rng.choice(makers)
        rec = (qa_chat(rng, i) if kind == "qa" else weather_chat(rng, i) if kind == "weather"
               else currency_chat(rng, i) if kind == "currency" else calendar_chat(rng, i) if kind == "calendar"
               else math_chat(rng) if kind == "math" else review_chat(rng, i) if kind == "review"
               else session_chat(rng, i))
        rec["id"] = f"chat-{i:04d}"
        out.append(json.dumps(rec, ensure_ascii=False))
    for k, line_no in enumerate(malformed_lines):
        out.insert(line_no - 1, malformed(k))
    return out


def harmony_records(rng: random.Random) -> list[str]:
    """openai-harmony ``Conversation.to_json()`` shape (system/developer content items)."""
    out = []
    for i in range(20):
        city = rng.choice(sorted(CITIES))
        r = weather(rng, city, "celsius")
        day = rng.randint(1, 28)
        tool = {"name": "get_weather", "description": "Current weather for a city.",
                "parameters": TOOLS["get_weather"]["function"]["parameters"]}
        text = (lambda t: [{"type": "text", "text": t}])
        msgs = [
            {"role": "system", "name": None, "content": [{
                "model_identity": "You are ChatGPT, a large language model trained by OpenAI.",
                "reasoning_effort": rng.choice(["Low", "Medium", "High"]), "conversation_start_date": f"2025-05-{day:02d}",
                "knowledge_cutoff": "2024-06",
                "channel_config": {"valid_channels": ["analysis", "commentary", "final"], "channel_required": True},
                "type": "system_content"}]},
            {"role": "developer", "name": None, "content": [{
                "instructions": "Answer in one or two sentences.",
                "tools": {"functions": {"name": "functions", "tools": [tool]}}, "type": "developer_content"}]},
            {"role": "user", "name": None, "content": text(f"Is it warm enough for a picnic in {city} today?")},
            {"role": "assistant", "name": None, "content": text(f"Need current weather for {city}."),
             "channel": "analysis"},
            {"role": "assistant", "name": None, "content": text(json.dumps({"city": city})), "channel": "commentary",
             "recipient": "functions.get_weather", "content_type": "<|constrain|>json"},
            {"role": "tool", "name": "functions.get_weather", "content": text(json.dumps(r)), "channel": "commentary",
             "recipient": "assistant"},
            {"role": "assistant", "name": None, "channel": "final", "content": text(
                f"It's {r['temperature']}°C and {r['condition']} in {city}"
                + (": good picnic weather." if r["temperature"] >= 18 and "rain" not in r["condition"]
                   else ", so maybe bring a jacket or pick another day."))},
        ]
        out.append(json.dumps({"messages": msgs}, ensure_ascii=False))
    return out


def canonical_records(rng: random.Random) -> list[str]:
    """Canonical dicts in the formats' own terms: channels, preambles, recipients."""
    out = []
    for i in range(20):
        q, r, a = word_problem(rng)
        msgs = [{"role": "system", "content": SYSTEMS[4]},
                {"role": "user", "content": q},
                {"role": "assistant", "channel": "analysis", "content": r},
                {"role": "assistant", "channel": "final", "content": a}]
        if i % 3 == 0:
            q2, a2 = QA[rng.randrange(len(QA))]
            msgs += [{"role": "user", "content": q2}, {"role": "assistant", "channel": "final", "content": a2}]
        out.append(json.dumps({"messages": msgs}, ensure_ascii=False))
    return out


def sharegpt_records(rng: random.Random) -> list[str]:
    out = []
    for i in range(25):
        turns = []
        if i % 2:
            turns.append({"from": "system", "value": rng.choice(SYSTEMS[:3])})
        for q, a in rng.sample(QA, rng.choice([1, 2, 2, 3])):
            turns += [{"from": "human", "value": q}, {"from": "gpt", "value": a}]
        out.append(json.dumps({"conversations": turns}, ensure_ascii=False))
    return out


def main() -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    rng = random.Random(SEED)
    files = {"chat.jsonl": chat_records(rng), "harmony.jsonl": harmony_records(rng),
             "canonical.jsonl": canonical_records(rng), "sharegpt.jsonl": sharegpt_records(rng)}
    total = 0
    for name, lines in files.items():
        (OUT / name).write_text("\n".join(lines) + "\n", encoding="utf-8")
        total += len(lines)
        print(f"{OUT / name}: {len(lines)} records, {(OUT / name).stat().st_size:,} bytes")
    print(f"{total} records")


if __name__ == "__main__":
    main()
