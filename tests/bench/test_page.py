"""BENCHMARKS.md is a results page made by one command from the committed results: it cannot drift from them, stays
short, and keeps the place where the embedded stores' table goes."""

from __future__ import annotations

from bench import page


def test_the_committed_page_is_what_the_results_give() -> None:
    assert page.PAGE.read_text("utf-8") == page.render(), "BENCHMARKS.md drifted: run `python -m bench.page`"


def test_the_page_is_short_and_names_its_command() -> None:
    text = page.render()
    assert text.count("\n") <= 315
    assert "python -m bench.page" in text


def test_every_plot_it_shows_is_committed() -> None:
    for name, _title in page.PLOTS:
        assert (page.RESULTS / name).is_file(), name


def test_the_embedded_stores_have_a_delimited_place() -> None:
    text = page.render()
    section = text[text.index("## Against the embedded stores users pick instead") :]
    assert section.index(page.EMBEDDED_START) < section.index(page.EMBEDDED_END) < section.index("\n## ")


def test_retrieval_tables_are_read_back_as_figures() -> None:
    parsed = page.parse_retrieval(page.RETRIEVAL_MD.read_text("utf-8"))
    assert set(parsed) >= {"realtalk", "madial"}
    assert all(0.0 <= s["ltm hybrid"]["recall@10"] <= 1.0 for s in parsed.values())
