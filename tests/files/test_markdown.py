"""The one front-matter splitter that validation, chunking and the remember prompt share."""

from __future__ import annotations

from ltm.files.index import chunk
from ltm.files.markdown import front_matter, opens_front_matter, split_front_matter

SKILL = "---\nname: pdf-forms\ndescription: Fill PDF forms after reading their fields.\n---\n# Steps\n\nRead fields.\n"


def test_split_keeps_every_character_but_the_fences() -> None:
    meta, body = split_front_matter(SKILL)
    assert meta == "name: pdf-forms\ndescription: Fill PDF forms after reading their fields.\n"
    assert body == "# Steps\n\nRead fields.\n"
    crlf = SKILL.replace("\n", "\r\n")
    meta, body = split_front_matter(crlf)
    assert meta is not None and meta.startswith("name: pdf-forms\r\n") and body.endswith("Read fields.\r\n")


def test_absent_and_unclosed_front_matter() -> None:
    assert split_front_matter("# Title\n---\n") == (None, "# Title\n---\n")
    assert not opens_front_matter("# Title\n")
    unclosed = "---\nname: x\n# no closing line\n"
    assert split_front_matter(unclosed) == (None, unclosed)
    assert opens_front_matter(unclosed)
    assert split_front_matter("") == (None, "")


def test_front_matter_is_a_safe_mapping_or_none() -> None:
    assert front_matter(SKILL) == {"name": "pdf-forms", "description": "Fill PDF forms after reading their fields."}
    assert front_matter("---\n- a list\n---\nbody") is None
    assert front_matter("---\nname: [unclosed\n---\nbody") is None
    assert front_matter("---\nx: !!python/object/apply:os.system ['echo hi']\n---\nbody") is None  # never runs


def test_chunks_put_the_front_matter_first() -> None:
    pieces = chunk(SKILL)
    assert pieces[0] == "name: pdf-forms\ndescription: Fill PDF forms after reading their fields."
    assert pieces[1] == "# Steps\n\nRead fields."
