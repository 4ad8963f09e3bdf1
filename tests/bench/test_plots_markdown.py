"""Embedding figures in the results markdown (``bench.plots.embed``): placed once, idempotent."""

from bench import plots

WRITTEN = ("# Title\n\nintro\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\nFloors: text.\n\n"
           "## Later\n\n| c |\n|---|\n| 3 |\n")
BLOCK = "<!-- plots:begin -->\n![fig one](one.png)\n<!-- plots:end -->\n"


def test_block_goes_after_the_first_table(tmp_path):
    md = tmp_path / "r.md"
    md.write_text(WRITTEN)
    assert plots.embed(md, [("fig one", "one.png")]) is True
    assert md.read_text() == WRITTEN.replace("| 1 | 2 |\n\n", "| 1 | 2 |\n\n" + BLOCK + "\n")


def test_embed_twice_and_after_the_writer_rewrites_gives_the_same_file(tmp_path):
    md = tmp_path / "r.md"
    md.write_text(WRITTEN)
    images = [("fig one", "one.png"), ("fig two", "two.png")]
    plots.embed(md, images)
    first = md.read_text()
    assert plots.embed(md, images) is False
    assert md.read_text() == first
    md.write_text(WRITTEN)  # the writer of the markdown runs again
    assert plots.embed(md, images) is True
    assert md.read_text() == first
    assert first.count(plots.BEGIN) == 1 and first.count(plots.END) == 1
    assert "![fig one](one.png)\n\n![fig two](two.png)\n" in first


def test_existing_block_is_replaced_in_place(tmp_path):
    md = tmp_path / "r.md"
    md.write_text(WRITTEN)
    plots.embed(md, [("fig one", "one.png")])
    assert plots.embed(md, [("fig one", "one.png"), ("fig two", "two.png")]) is True
    text = md.read_text()
    assert text.count(plots.BEGIN) == 1
    # everything outside the block is the writer's text
    begin, end = text.index(plots.BEGIN), text.index(plots.END) + len(plots.END)
    assert text[:begin] + text[end + 1:] == WRITTEN.replace("| 1 | 2 |\n\n", "| 1 | 2 |\n\n\n")
    assert text[begin:end].count("![") == 2


def test_heading_picks_the_table_under_it(tmp_path):
    md = tmp_path / "r.md"
    md.write_text(WRITTEN)
    plots.embed(md, [("fig one", "one.png")], heading="## Later")
    assert md.read_text() == WRITTEN + "\n" + BLOCK


def test_no_table_or_missing_heading_puts_the_block_at_the_end(tmp_path):
    md = tmp_path / "r.md"
    md.write_text("# Title\n\ntext\n")
    plots.embed(md, [("fig one", "one.png")])
    assert md.read_text() == "# Title\n\ntext\n\n" + BLOCK
    md.write_text(WRITTEN)
    plots.embed(md, [("fig one", "one.png")], heading="## Absent")
    assert md.read_text() == WRITTEN + "\n" + BLOCK


def test_an_empty_block_left_by_the_writer_is_filled_in_place(tmp_path):
    md = tmp_path / "utilization.md"
    written = "# U\n\n| a |\n|---|\n| 1 |\n\n<!-- plots:begin -->\n<!-- plots:end -->\n"
    md.write_text(written)
    assert plots.embed(md, [("one", "one.png"), ("two", "two.png")]) is True
    assert md.read_text() == written.replace(
        "<!-- plots:begin -->\n", "<!-- plots:begin -->\n![one](one.png)\n\n![two](two.png)\n")
    assert plots.embed(md, [("one", "one.png"), ("two", "two.png")]) is False
