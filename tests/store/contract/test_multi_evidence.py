"""A question whose answer takes two turns, through the default search with the local model on every engine.

"What is the name of the dog Maya adopted?" matches the turn where Maya says she adopted a dog; the name is in her
next turn ("Biscuit. He already chewed ..."), which shares no word with the question and little meaning. The hybrid
reaches it through the turn before it and the sitting both belong to (docs/search.md, *Neighbours and sittings*),
while the other sittings' turns about dogs and names stay below it."""

from __future__ import annotations

from ltm import MemoryStorage, Message, Settings

DAY = 86_400.0
START = 1_700_000_000.0
SITTINGS = [
    [
        ("Leo", "Morning! Did the plumber ever come to fix your sink?"),
        ("Maya", "He did, finally. It only took him ten minutes."),
        ("Leo", "Typical. I'm off to the gym, talk later."),
    ],
    [
        ("Maya", "Guess what, I finally adopted a dog from the shelter, a beagle puppy!"),
        ("Leo", "No way, that's amazing! What did you call him?"),
        ("Maya", "Biscuit. He already chewed through one of my running shoes."),
        ("Leo", "Ha, welcome to owning a puppy."),
    ],
    [
        ("Leo", "My neighbour's dog barked all night again, I barely slept."),
        ("Maya", "That sounds awful, have you talked to them about it?"),
        ("Leo", "Not yet. Also I still need a name for my new bakery."),
        ("Maya", "How about Rise and Shine?"),
    ],
    [
        ("Maya", "I tried a new lasagna recipe with spinach and ricotta last night."),
        ("Leo", "Save me a slice next time! Work has been hectic, we ship the release on Friday."),
        ("Maya", "Good luck with the release, hope it goes smoothly."),
    ],
]
QUESTION = "What is the name of the dog Maya adopted?"
FIRST, SECOND = "adopted a dog from the shelter", "Biscuit. He already chewed"


def _conversation(store: MemoryStorage) -> None:
    messages = []
    for day, sitting in enumerate(SITTINGS):
        for i, (who, text) in enumerate(sitting):
            at = START + day * 3 * DAY + i * 60.0
            messages.append(Message(text, role=who, sent_from=who, created_at=at))
    store.add_batch(messages)


def _rank(hits: list[str], part: str) -> int:
    return next(i for i, text in enumerate(hits) if part in text)


def test_a_two_turn_answer_reaches_its_second_turn(settings: Settings) -> None:
    with MemoryStorage("two-turns", settings=settings.with_(embedding="local")) as store:
        _conversation(store)
        hybrid = [h.message.content for h in store.search(QUESTION, k=5)]
        dense = [h.message.content for h in store.search(QUESTION, k=14, mode="dense")]
    assert _rank(hybrid, FIRST) < 3 and _rank(hybrid, SECOND) < 3, hybrid
    # by meaning alone the answer is far below the question's own turn and the other sittings' dogs and names
    assert _rank(dense, SECOND) > _rank(dense, FIRST) + 2, dense
