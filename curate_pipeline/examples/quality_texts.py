"""Example training texts the project writes itself, so the default model needs no download.

"Good" is encyclopedia-style prose, the kind of reference text a quality classifier is meant
to find; "bad" is what random crawl is full of: calls to action, shop listings, cookie and
login notices, link farms. Documents are drawn from sentence pools with a fixed seed, so the
files (and the default model trained on them) are the same on every machine. A toy: train a
real model on your own reference corpus (docs/configuration.md: quality classifier).
"""

from __future__ import annotations

import random
from pathlib import Path

GOOD_SENTENCES = [
    "The river rises in the northern hills and flows south for nearly three hundred kilometres before it reaches the sea.",
    "Its valley has been farmed since the Bronze Age, and the oldest villages stand on terraces above the flood plain.",
    "In spring the river carries melt water from the mountains, and the lower reaches often flood the surrounding meadows.",
    "Bread is made from flour, water, salt and yeast, which ferments the dough and makes it rise.",
    "The baker kneads the dough to develop gluten, a network of proteins that traps the gas produced by the yeast.",
    "Historians believe that leavened bread was first baked in Egypt more than five thousand years ago.",
    "The cathedral was begun in the twelfth century and took almost two hundred years to complete.",
    "Its west front is decorated with statues of saints and kings carved from the local limestone.",
    "Photosynthesis is the process by which green plants use sunlight to turn carbon dioxide and water into sugar.",
    "The chlorophyll in the leaves absorbs red and blue light and reflects green, which is why most plants look green.",
    "The treaty ended a war that had lasted for more than a decade and redrew the borders of several states.",
    "Scholars still debate whether the agreement was a lasting settlement or only a pause between conflicts.",
    "The novel follows a young woman who leaves her village to study medicine in the capital.",
    "Critics have praised the book for its careful portrait of family life and its quiet humour.",
    "Volcanic islands form where magma rises from the mantle and builds up layers of rock on the ocean floor.",
    "Over millions of years the islands drift away from the hot spot, and their volcanoes become extinct.",
    "The composer wrote nine symphonies, several operas and a large number of songs for voice and piano.",
    "His later works are known for their long melodic lines and their unusual harmonies.",
    "Honey bees live in colonies of many thousands of workers, a few hundred drones and a single queen.",
    "The workers gather nectar and pollen from flowers and store the honey in wax cells inside the hive.",
    "The railway reached the town in the eighteen sixties and brought new trade to the valley.",
    "Many of the old warehouses along the canal have since been turned into homes and museums.",
    "The study found that children who read every day at home developed a larger vocabulary.",
    "The authors note that the effect was strongest in families where parents also read aloud.",
    "Glaciers carve deep valleys with steep sides and flat floors as they move slowly down the mountains.",
    "When the ice retreats, it leaves behind lakes, moraines and large boulders far from their source.",
    "The library holds more than two million books, including a collection of medieval manuscripts.",
    "Scholars from many countries come to study its maps, letters and early printed books.",
    "The language belongs to the same family as its neighbours, but its grammar has several unusual features.",
    "Most speakers today also use the national language at school and at work.",
]

BAD_SENTENCES = [
    "Click here to subscribe to our newsletter and get exclusive deals!",
    "Buy now and save 50% on all items, free shipping on orders over $49.",
    "SKU-4431 X99 blk/wht 12pk in stock, add to cart.",
    "This website uses cookies to improve your experience. Accept all cookies.",
    "Log in or sign up to continue. Forgot your password? Click here.",
    "Home | About us | Contact | Privacy policy | Log in",
    "Best price guaranteed!!! Limited time offer, click now.",
    "Share on Facebook Share on Twitter Pin it Email",
    "Add to wishlist. Compare. Quick view. Sold out.",
    "Click to download the free PDF now, no registration required.",
    "Hot singles in your area, click here to chat now.",
    "Copyright 2024 All rights reserved. Terms of use. Sitemap.",
    "Size: S M L XL XXL. Color: black, white, red. Qty: 1.",
    "Win a free iPhone, enter your email to claim your prize now!",
    "Cheap replica watches, best quality, fast delivery, order today.",
    "Page 1 2 3 4 5 Next » Last",
    "Related posts: click here, click here, click here.",
    "Sign up for our mailing list and get 10% off your first order.",
    "Customer reviews (0). Be the first to review this product.",
    "Tags: cheap, discount, sale, deal, offer, coupon, promo code.",
    "Loading... Please enable JavaScript to view this page.",
    "Download our app for the best shopping experience, click here.",
    "Item #88213 ships in 2-3 business days. Returns accepted.",
    "Follow us on Instagram for daily deals and giveaways!",
    "Skip to main content Menu Search Cart (0) Account",
    "Click the banner to claim your bonus, casino offer ends soon.",
    "Login | Register | My account | Checkout | Wishlist",
    "Subscribe now! Unsubscribe at any time. Click here for details.",
    "Free trial, cancel anytime, no credit card needed, click here.",
    "Breadcrumbs: Home > Products > Accessories > Cables",
]


def example_documents(sentences: list[str], n: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    return [" ".join(rng.sample(sentences, rng.randint(3, 6))) for _ in range(n)]


def write_examples(out_dir: str | Path, n: int = 80) -> tuple[Path, Path]:
    """Write good.txt and bad.txt (one document a line) under `out_dir`."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    good, bad = out / "good.txt", out / "bad.txt"
    good.write_text("\n".join(example_documents(GOOD_SENTENCES, n, 1)) + "\n", encoding="utf-8")
    bad.write_text("\n".join(example_documents(BAD_SENTENCES, n, 2)) + "\n", encoding="utf-8")
    return good, bad
