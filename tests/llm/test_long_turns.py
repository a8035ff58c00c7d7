"""A long stored turn is embedded window by window with the local model, so any part of it finds it; a text of one
window, and every query, keeps the vector it always had."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from ltm import MemoryStorage, Message, Settings
from ltm.llm.local import onnx_model
from ltm.llm.onnx_model import WINDOW_OVERLAP, OnnxModel
from ltm.store.embedder import QUERY, TEXT

pytestmark = pytest.mark.slow

RENOVATION = (
    "We finally started on the kitchen last month after putting it off for almost two years. "
    "The old cabinets came out first, and behind them we found water damage along the back wall. "
    "The plumber said the pipe under the sink had been leaking slowly for a long time. "
    "So before anything else we had to replace a section of the floor joists and dry the wall out. "
    "That pushed the schedule back by three weeks and ate most of the contingency budget. "
    "For the counters we went with a pale quartz, because marble stains too easily with coffee. "
    "The cabinet maker wants the final measurements before he cuts anything, which is fair. "
    "We argued for a long time about open shelves versus closed cupboards on the window side. "
    "In the end we chose cupboards, since open shelves collect grease and dust near the stove. "
    "The electrician moved two sockets and added a circuit for the induction hob. "
    "Tiling the splash back took a whole weekend, mostly because the walls are not straight. "
    "The grout colour looked grey in the shop and almost blue once it dried on the wall. "
    "We are living on takeaway and a camping stove in the dining room until it is done. "
    "The extractor hood is still on back order, and the supplier keeps moving the date. "
    "Painting the ceiling was the worst job of all, my neck hurt for days afterwards. "
    "Next come the skirting boards, the door frames and a new light above the table. "
    "If everything goes to plan the kitchen should be usable again by the end of the month. "
    "The old fridge went to a friend who is furnishing a flat for his daughter at university. "
    "We kept the original oak table, sanded it down and gave it three coats of hard wax oil. "
    "The window sill got a new board, since the old one had rotted where the condensation ran. "
    "Our builder recommends sealing the quartz once a year, although the shop said it never needs it. "
)
DOG = (  # a story of its own after the kitchen: about a quarter of the turn
    "Other news: my sister Margarethe adopted a retired racing greyhound called Biscuit from the animal rescue. "
    "He is six years old, very gentle, and sleeps about twenty hours a day on her sofa. "
    "The rescue told her that greyhounds need a coat in winter because they have almost no body fat. "
    "She walks him twice a day on a lead, since he would chase any squirrel in the park. "
    "Biscuit raced for four seasons before his owner retired him, and he still has the tattoo in his ear. "
    "Margarethe says he is the calmest dog she has ever met, and the neighbours' children adore him. "
    "He eats a special diet, because racing dogs often have sensitive stomachs and bad teeth. "
    "She is already thinking about adopting a second greyhound so that Biscuit has company during the day. "
)
GARDEN = (
    "The garden needs a lot of work this year after the wet winter flattened half the beds. "
    "We dug out the old roses, moved the compost heap and laid a gravel path to the shed. "
    "The tomatoes went into the greenhouse early, and the courgettes are already flowering. "
    "A neighbour gave us cuttings of lavender and rosemary for the border along the fence. "
    "Slugs ate every lettuce seedling twice, so now they grow in pots on the patio table. "
    "The apple tree needs pruning, but that has to wait until the leaves have dropped in autumn. "
) * 3
SHORT = [
    "The vet said the cat needs a lighter diet",
    "We should book the train tickets for Easter",
    "The printer on the second floor is out of toner",
]


@pytest.fixture(scope="module")
def model() -> OnnxModel:
    return onnx_model(Settings(embedding="local"))


def test_a_long_text_is_embedded_in_overlapping_windows(model: OnnxModel) -> None:
    text = RENOVATION * 2 + DOG + RENOVATION
    windows = model.windows(text)
    assert len(windows) >= 3 and all(len(w) <= 256 for w in windows)
    for before, after in zip(windows, windows[1:], strict=False):  # [CLS] ... [SEP]: the pieces between overlap
        assert before[-1 - WINDOW_OVERLAP : -1] == after[1 : 1 + WINDOW_OVERLAP]
    assert model.windows(SHORT[0]) == [model._tokenizer.encode(SHORT[0]).ids]


def test_a_fact_past_the_first_300_words_is_found_by_dense_search(tmp_path: Path, model: OnnxModel) -> None:
    long_turn = RENOVATION + DOG
    assert len(RENOVATION.split()) > 300  # the fact starts past the model's first window
    first_window, *later = (model._tokenizer.decode(ids) for ids in model.windows(long_turn))
    assert "greyhound" not in first_window and any("greyhound" in w for w in later)
    question = "How old is my sister's greyhound?"
    with MemoryStorage("chat", settings=Settings(storage_dir=tmp_path, embedding="local")) as store:
        store.add_batch(
            [
                Message(long_turn, role="assistant", id="long"),
                Message(GARDEN, role="assistant", id="garden"),
                *(Message(text, role="user", id=f"short{i}") for i, text in enumerate(SHORT)),
            ]
        )
        hits = store.search(question, k=1, mode="dense")
        assert [h.message.id for h in hits] == ["long"]
    # what a store held before (the first window alone: the kitchen) ranks the long turn below the cat's diet
    q = model.vectors([question])[0]
    first = model.vectors([long_turn])[0]
    assert float(first @ q) < max(float(v @ q) for v in model.vectors(SHORT))


def test_one_window_texts_and_queries_keep_their_vectors(tmp_path: Path, model: OnnxModel) -> None:
    long_turn = RENOVATION * 2 + DOG
    texts = [*SHORT, long_turn, "a", GARDEN]
    windowed, today = model.text_vectors(texts), model.vectors(texts)
    for row, text in enumerate(texts):
        if len(model.windows(text)) == 1:
            assert np.array_equal(windowed[row], today[row]), text  # byte for byte, beside a long text too
        else:
            assert float(windowed[row] @ today[row]) < 0.99 and abs(np.linalg.norm(windowed[row]) - 1) < 1e-5
    assert np.array_equal(model.text_vectors([SHORT[0]]), model.vectors([SHORT[0]]))  # one add: one unpadded run
    assert (
        float(model.text_vectors([long_turn])[0] @ windowed[texts.index(long_turn)]) > 0.99999
    )  # alone or beside others: padding only
    with MemoryStorage("chat", settings=Settings(storage_dir=tmp_path, embedding="local")) as store:
        embedder = store.embedder
        queries = [long_turn, SHORT[1]]
        assert np.array_equal(embedder.embed(queries, 384, purpose=QUERY), model.vectors(queries))  # first window
        assert np.array_equal(embedder.embed(texts, 384, purpose=TEXT), windowed)
