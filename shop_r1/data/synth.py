"""Synthetic shopping sessions in the paper's format, deterministic by seed.

A session walks a small web shop: home -> search -> results (filters, sort, next page,
refine the query) -> product page (options, reviews) -> add to cart / buy now, or
terminate when nothing fits. Every page is simplified HTML whose interactable
elements carry `name="..."`; each session draws one of three naming styles so a model
must read the page instead of memorising names. Rationales are first-person and refer
to the shopper's goal and what is on the page.

`mix` weights the action type chosen at each decision point (renormalised over the
types possible there); `shop-r1 data stats` shows the mix that results.
"""

from __future__ import annotations

import functools
import random
import zlib
from collections.abc import Callable, Iterator
from html import escape

from shop_r1.actions import ACTION_TYPES, Action
from shop_r1.data.schema import Session, Step

DEFAULT_MIX = {"click": 0.75, "type_and_submit": 0.15, "terminate": 0.10}
MAX_STEPS = 14

# category -> (nouns, brands, option name -> values, price range)
CATALOG: dict[str, tuple[list[str], list[str], dict[str, list[str]], tuple[int, int]]] = {
    "shoes": (
        ["running shoes", "trail shoes", "sneakers", "hiking boots", "sandals"],
        ["Nike", "Adidas", "Brooks", "Salomon", "Merrell", "Asics"],
        {"size": ["7", "8", "8.5", "9", "10", "11"], "color": ["black", "blue", "grey", "white"]},
        (40, 180),
    ),
    "kitchen": (
        ["coffee maker", "blender", "air fryer", "chef knife", "frying pan", "kettle"],
        ["Ninja", "Cuisinart", "KitchenAid", "Breville", "OXO", "Hamilton Beach"],
        {"color": ["black", "stainless", "red"], "capacity": ["small", "medium", "large"]},
        (15, 250),
    ),
    "electronics": (
        [
            "wireless earbuds",
            "bluetooth speaker",
            "usb c charger",
            "laptop stand",
            "mechanical keyboard",
            "webcam",
        ],
        ["Anker", "Sony", "JBL", "Logitech", "Apple", "Samsung"],
        {"color": ["black", "white", "silver"], "model": ["standard", "pro"]},
        (12, 300),
    ),
    "home": (
        ["desk lamp", "throw blanket", "storage bins", "bath towels", "pillow", "wall clock"],
        ["Amazon Basics", "Umbra", "IKEA", "Brooklinen", "Casper"],
        {"color": ["beige", "navy", "white", "grey"], "size": ["small", "queen", "king"]},
        (10, 120),
    ),
    "outdoors": (
        ["yoga mat", "water bottle", "camping tent", "backpack", "sleeping bag"],
        ["Hydro Flask", "Coleman", "Osprey", "Gaiam", "REI Co-op"],
        {"color": ["green", "black", "orange"], "size": ["20 oz", "32 oz", "2 person", "4 person"]},
        (15, 350),
    ),
    "beauty": (
        ["shampoo", "moisturizer", "sunscreen", "electric toothbrush", "hair dryer"],
        ["CeraVe", "Olaplex", "Neutrogena", "Philips", "Dyson"],
        {"size": ["travel", "regular", "value pack"]},
        (6, 400),
    ),
}
ADJECTIVES = [
    "lightweight",
    "waterproof",
    "compact",
    "durable",
    "eco friendly",
    "premium",
    "budget",
    "quiet",
    "extra large",
    "portable",
    "organic",
    "non slip",
]

# Three sites name the same controls differently.
NAME_STYLES = [
    {
        "search": "search_input",
        "cart": "cart_link",
        "add": "add_to_cart",
        "buy": "buy_now",
        "reviews": "see_reviews",
        "back": "back_to_results",
        "next": "next_page",
        "sort": "sort_by_price",
        "checkout": "proceed_to_checkout",
        "result": "result_{i}_title",
        "filter": "filter_{k}_{v}",
        "option": "option_{k}_{v}",
        "nav": "nav_{v}",
    },
    {
        "search": "searchBox",
        "cart": "headerCart",
        "add": "addToCartButton",
        "buy": "buyNowButton",
        "reviews": "reviewsTab",
        "back": "backButton",
        "next": "paginationNext",
        "sort": "sortPriceAsc",
        "checkout": "checkoutButton",
        "result": "productCard{i}",
        "filter": "refine{k}{v}",
        "option": "variant{k}{v}",
        "nav": "menu{v}",
    },
    {
        "search": "field-keywords",
        "cart": "nav-cart",
        "add": "submit.add-to-cart",
        "buy": "submit.buy-now",
        "reviews": "acr-customer-reviews",
        "back": "breadcrumb-back",
        "next": "pagination-next",
        "sort": "s-sort-price-asc",
        "checkout": "sc-proceed",
        "result": "s-result-{i}",
        "filter": "p_{k}-{v}",
        "option": "dropdown_{k}_{v}",
        "nav": "nav-{v}",
    },
]


@functools.lru_cache(maxsize=8192)  # a few hundred distinct values, ~70 calls a session
def _slug(text: str) -> str:
    return "".join(c if c.isalnum() else "_" for c in text.lower()).strip("_")


class _Shopper:
    """One session's state: goal, site style, current page, steps so far."""

    def __init__(self, rng: random.Random, weights: dict[str, float], site: str) -> None:
        self.rng = rng
        self.weights = weights
        self.site = site
        self.style = rng.choice(NAME_STYLES)
        self.category = rng.choice(list(CATALOG))
        nouns, brands, options, (lo, hi) = CATALOG[self.category]
        self.noun = rng.choice(nouns)
        self.brand = rng.choice(brands) if rng.random() < 0.4 else None
        self.adj = rng.choice(ADJECTIVES) if rng.random() < 0.5 else None
        self.budget = rng.randint(lo + (hi - lo) // 4, hi)
        self.options = options
        self.wanted = {k: rng.choice(v) for k, v in options.items() if rng.random() < 0.7}
        self.steps: list[Step] = []
        self.query = ""
        self.cart = 0

    def name(self, key: str, **kw: str) -> str:
        template = self.style[key]
        if key in ("filter", "option", "nav"):
            kw = {
                k: _slug(v) if self.style is NAME_STYLES[0] else _slug(v).replace("_", "")
                for k, v in kw.items()
            }
        return template.format(**kw)

    def pick(self, possible: dict[str, float]) -> str:
        """Choose an action type: structural weight x configured mix."""
        kinds = [k for k in possible if possible[k] * self.weights[k] > 0]
        if not kinds:
            return "terminate"
        return self.rng.choices(kinds, [possible[k] * self.weights[k] for k in kinds])[0]

    def add(self, page: str, url: str, action: Action, rationale: str) -> None:
        self.steps.append(Step(page=page, action=action, rationale=rationale, url=url))

    # -- pages -----------------------------------------------------------------
    def header(self) -> str:
        return (
            f'<header><a name="{self.name("nav", v="home")}">{self.site}</a>'
            f'<input name="{self.name("search")}" type="text" placeholder="Search" '
            f'value="{escape(self.query)}"/>'
            f'<a name="{self.name("cart")}">Cart ({self.cart})</a></header>'
        )

    def products(self, n: int) -> list[tuple[str, int, float, int]]:
        nouns, brands, _, (lo, hi) = CATALOG[self.category]
        out = []
        for _ in range(n):
            brand = self.rng.choice(brands)
            noun = self.noun if self.rng.random() < 0.7 else self.rng.choice(nouns)
            adj = self.rng.choice(ADJECTIVES)
            title = f"{brand} {adj.title()} {noun.title()}"
            price = self.rng.randint(lo, hi)
            out.append(
                (title, price, round(self.rng.uniform(2.8, 5.0), 1), self.rng.randint(3, 9000))
            )
        return out


def _session(index: int, seed: int, weights: dict[str, float]) -> Session:
    rng = random.Random(f"{seed}:{index}")
    site = rng.choice(["ShopMart", "Cartly", "BuyHub", "DealNest"])
    s = _Shopper(rng, weights, site)
    base = f"https://{site.lower()}.example"
    goal = " ".join(x for x in (s.adj, s.brand, s.noun) if x)

    # Home page: search (usual), browse a category, or leave at once.
    cats = "".join(f'<li><a name="{s.name("nav", v=c)}">{c.title()}</a></li>' for c in CATALOG)
    home = f"<html><body>{s.header()}<nav><ul>{cats}</ul></nav><main><h2>Today's deals</h2></main></body></html>"
    kind = s.pick({"type_and_submit": 6.0, "click": 1.0, "terminate": 0.05})
    if kind == "terminate":
        s.add(
            home,
            base + "/",
            Action("terminate"),
            "I opened the shop by accident; I don't need anything right now.",
        )
        return Session(f"synth-{seed}-{index:06d}", s.steps, _meta(s, goal))
    if kind == "click":
        s.add(
            home,
            base + "/",
            Action("click", s.name("nav", v=s.category)),
            f"I'm after a {s.noun}, so I'll start by browsing the {s.category} section.",
        )
    else:
        s.query = goal
        s.add(
            home,
            base + "/",
            Action("type_and_submit", s.name("search"), s.query),
            f"I need a {goal}; searching for it is the quickest way to find one.",
        )
    page_no = 1
    while len(s.steps) < MAX_STEPS:
        items = s.products(rng.randint(5, 9))
        done = _results_step(s, base, items, page_no, goal)
        if done == "product":
            if _product_steps(s, base, items, goal):
                break
            continue
        if done == "end":
            break
        if done == "next":
            page_no += 1
    if s.steps[-1].action.type != "terminate" and s.steps[-1].action.name not in (
        s.name("buy"),
        s.name("checkout"),
    ):
        s.add(
            s.steps[-1].page,
            s.steps[-1].url or base,
            Action("terminate"),
            "I've spent too long on this and still haven't found the right one, so I'm leaving.",
        )
    return Session(f"synth-{seed}-{index:06d}", s.steps, _meta(s, goal))


def _meta(s: _Shopper, goal: str) -> dict[str, str]:
    """The goal, budget and wanted options drive the shopper's choices; the persona
    states them the way a profile would, so the steps they decide become predictable."""
    wants = ", ".join(f"{k} {v}" for k, v in s.wanted.items())
    persona = f"wants a {goal}; budget up to ${s.budget}" + (f"; prefers {wants}" if wants else "")
    return {"source": "synth", "goal": goal, "persona": persona}


def _results_step(s: _Shopper, base: str, items: list, page_no: int, goal: str) -> str:
    rng = s.rng
    filters = "".join(
        f'<label><input type="checkbox" name="{s.name("filter", k=k, v=v)}"/>{v}</label>'
        for k, vals in s.options.items()
        for v in vals
    )
    cards = "".join(
        f'<div class="result"><a name="{s.name("result", i=str(i + 1))}">{escape(t)}</a>'
        f'<span class="price">${p}.99</span><span class="rating">{r} stars ({n:,})</span></div>'
        for i, (t, p, r, n) in enumerate(items)
    )
    page = (
        f"<html><body>{s.header()}<aside><h3>Filters</h3>{filters}</aside><main>"
        f'<button name="{s.name("sort")}">Price: low to high</button>{cards}'
        f'<a name="{s.name("next")}">Next page</a></main></body></html>'
    )
    where = f"s?k={s.query.replace(' ', '+')}" if s.query else f"b?node={s.category}"
    url = f"{base}/{where}&page={page_no}"
    relevant = [i for i, it in enumerate(items) if s.noun.title() in it[0]]
    affordable = [i for i in relevant if items[i][1] <= s.budget]
    kind = s.pick(
        {"click": 5.0, "type_and_submit": 1.0, "terminate": 6.0 if not affordable else 2.0}
    )
    if kind == "terminate":
        s.add(
            page,
            url,
            Action("terminate"),
            f"Nothing here is under ${s.budget} and none of it looks right; I'm giving up on this.",
        )
        return "end"
    if kind == "type_and_submit":
        extra = rng.choice([v for v in s.wanted.values()] or [rng.choice(ADJECTIVES)])
        s.query = (
            f"{extra} {s.noun}" if rng.random() < 0.5 else f"{s.noun} under {s.budget} dollars"
        )
        s.add(
            page,
            url,
            Action("type_and_submit", s.name("search"), s.query),
            f"These results aren't quite what I want, so I'll refine my search to '{s.query}'.",
        )
        return "search"
    roll = rng.random()
    if roll < 0.12 and s.wanted:
        k, v = rng.choice(list(s.wanted.items()))
        s.add(
            page,
            url,
            Action("click", s.name("filter", k=k, v=v)),
            f"I only want {v} options, so I'll filter the results by {k}.",
        )
        return "filter"
    if roll < 0.2:
        s.add(
            page,
            url,
            Action("click", s.name("sort")),
            f"My budget is about ${s.budget}, so I'll sort by price to see cheaper ones first.",
        )
        return "sort"
    if roll < 0.27 and page_no < 3:
        s.add(
            page,
            url,
            Action("click", s.name("next")),
            "None of these stand out yet; let me look at the next page of results.",
        )
        return "next"
    i = rng.choice(affordable or relevant or list(range(len(items))))
    title, price, rating, _ = items[i]
    why = (
        f"it's ${price}.99, within my budget"
        if price <= s.budget
        else f"the {rating}-star rating looks good"
    )
    s.add(
        page,
        url,
        Action("click", s.name("result", i=str(i + 1))),
        f"The {title} looks close to the {s.noun} I want and {why}, so I'll open it.",
    )
    s.chosen = items[i]  # type: ignore[attr-defined]
    return "product"


def _product_steps(s: _Shopper, base: str, items: list, goal: str) -> bool:
    """Steps on a product page; True when the session ended (bought or left)."""
    rng = s.rng
    title, price, rating, n_reviews = s.chosen  # type: ignore[attr-defined]
    url = f"{base}/dp/{zlib.crc32(title.encode()) % 10**9:09d}"
    picked: dict[str, str] = {}
    while len(s.steps) < MAX_STEPS:
        opts = "".join(
            f"<fieldset><legend>{k}</legend>"
            + "".join(
                f'<button name="{s.name("option", k=k, v=v)}"{" class=selected" if picked.get(k) == v else ""}>{v}</button>'
                for v in vals
            )
            + "</fieldset>"
            for k, vals in s.options.items()
        )
        page = (
            f'<html><body>{s.header()}<main><h1>{escape(title)}</h1><span class="price">${price}.99</span>'
            f'<span class="rating">{rating} out of 5 ({n_reviews:,} ratings)</span>{opts}'
            f'<a name="{s.name("reviews")}">Customer reviews</a>'
            f'<button name="{s.name("add")}">Add to Cart</button><button name="{s.name("buy")}">Buy Now</button>'
            f'<a name="{s.name("back")}">Back to results</a></main></body></html>'
        )
        missing = [k for k in s.wanted if k not in picked]
        too_pricey = price > s.budget
        kind = s.pick({"click": 6.0, "terminate": 12.0 if too_pricey else 3.0})
        if kind == "terminate":
            s.add(
                page,
                url,
                Action("terminate"),
                f"At ${price}.99 this is more than I want to spend, and I'm not convinced; I'll stop here."
                if too_pricey
                else "On reflection this isn't what I had in mind, so I'm done shopping.",
            )
            return True
        if missing:
            k = missing[0]
            v = s.wanted[k]
            picked[k] = v
            s.add(
                page,
                url,
                Action("click", s.name("option", k=k, v=v)),
                f"I want the {v} one, so I'll select {v} for the {k}.",
            )
            continue
        roll = rng.random()
        if roll < 0.15 and "reviewed" not in picked:
            picked["reviewed"] = "yes"
            s.add(
                page,
                url,
                Action("click", s.name("reviews")),
                f"Before paying ${price}.99 I want to read what other buyers say about it.",
            )
            continue
        if roll < 0.3 or too_pricey:
            s.add(
                page,
                url,
                Action("click", s.name("back")),
                "This one isn't quite right for me; I'll go back and compare other results.",
            )
            return False
        if roll < 0.55:
            s.add(
                page,
                url,
                Action("click", s.name("buy")),
                f"This {s.noun} has everything I need at a fair price, so I'll buy it now.",
            )
            return True
        s.cart += 1
        s.add(
            page,
            url,
            Action("click", s.name("add")),
            f"The {title} fits what I was looking for; I'll add it to my cart.",
        )
        cart_page = (
            f"<html><body>{s.header()}<main><h1>Shopping Cart</h1><div>{escape(title)} ${price}.99</div>"
            f'<button name="{s.name("checkout")}">Proceed to checkout</button>'
            f'<a name="{s.name("nav", v="home")}">Continue shopping</a></main></body></html>'
        )
        if s.pick({"click": 4.0, "terminate": 4.0}) == "terminate":
            s.add(
                cart_page,
                f"{base}/cart",
                Action("terminate"),
                "The shipping cost on the cart page is higher than I expected, so I'll leave it.",
            )
        else:
            s.add(
                cart_page,
                f"{base}/cart",
                Action("click", s.name("checkout")),
                "Everything in my cart looks right, so I'll proceed to checkout.",
            )
        return True
    return True


def generate_sessions(n: int, seed: int = 0, mix: dict[str, float] | None = None) -> list[Session]:
    """`n` synthetic sessions; the same (n, seed, mix) always gives the same sessions."""
    return list(iter_sessions(n, seed, mix))


def iter_sessions(n: int, seed: int = 0, mix: dict[str, float] | None = None) -> Iterator[Session]:
    """The sessions of `generate_sessions`, one at a time: each session has its own
    seeded generator, so streaming them to disk needs constant memory."""
    weights = normalise_mix(mix)
    for i in range(n):
        yield _session(i, seed, weights)


def normalise_mix(mix: dict[str, float] | None) -> dict[str, float]:
    """Validated action-type weights (missing types default to 0 when a mix is given)."""
    if mix is None:
        return dict(DEFAULT_MIX)
    unknown = sorted(set(mix) - set(ACTION_TYPES))
    if unknown:
        raise ValueError(
            f"mix: unknown action type(s) {', '.join(unknown)}; use {', '.join(ACTION_TYPES)}"
        )
    weights = {k: float(mix.get(k, 0.0)) for k in ACTION_TYPES}
    if any(w < 0 for w in weights.values()) or sum(weights.values()) <= 0:
        raise ValueError("mix: weights must be >= 0 with a positive sum")
    return weights


MixParser = Callable[[str], dict[str, float]]


def parse_mix(text: str) -> dict[str, float]:
    """`click=0.7,type_and_submit=0.2,terminate=0.1` -> dict (ValueError when malformed)."""
    out: dict[str, float] = {}
    for part in filter(None, (p.strip() for p in text.split(","))):
        key, sep, value = part.partition("=")
        if not sep:
            raise ValueError(f"mix: {part!r} is not type=weight")
        try:
            out[key.strip()] = float(value)
        except ValueError:
            raise ValueError(f"mix: weight of {key.strip()!r} is not a number: {value!r}") from None
    return normalise_mix(out)
