"""The matplotlib Figure formatter, on figures made without pyplot (no global state)."""

from __future__ import annotations

import base64

import pytest
from matplotlib.figure import Figure

from pyrelune.worker import display, libraries
from pyrelune.worker.display import mime_bundle
from pyrelune.worker.mplbackend import figure_bundle, is_empty


@pytest.fixture(autouse=True)
def adapted(monkeypatch: pytest.MonkeyPatch) -> None:
    """Figures get pyrelune's formatter, as a worker's once a cell imports matplotlib."""
    import matplotlib.figure

    monkeypatch.setattr(display, "_formatters", {})
    libraries.ADAPTERS["matplotlib.figure"].imported(matplotlib.figure)


def plotted() -> Figure:
    figure = Figure()
    figure.subplots().plot([1, 3, 2])
    return figure


def test_a_figure_is_svg_and_its_repr() -> None:
    data, _ = mime_bundle(plotted())
    assert set(data) == {"image/svg+xml", "text/plain"}
    assert "<svg" in data["image/svg+xml"] and "</svg>" in data["image/svg+xml"]
    assert data["text/plain"] == "<Figure size 640x480 with 1 Axes>"


def test_other_formats_when_asked() -> None:
    data, _ = mime_bundle(plotted(), include=["image/png", "text/plain"])
    assert set(data) == {"image/png", "text/plain"}
    assert base64.b64decode(data["image/png"]).startswith(b"\x89PNG")
    assert figure_bundle(plotted(), None, ["image/svg+xml"]) == ({}, {})


def test_an_empty_figure_has_no_image() -> None:
    figure = Figure()
    assert is_empty(figure) and figure_bundle(figure, None, None) == ({}, {})
    figure.text(0.5, 0.5, "only text")
    assert not is_empty(figure)


def test_a_failing_draw_is_reported_and_skipped(capsys: pytest.CaptureFixture[str]) -> None:
    figure = plotted()
    figure.axes[0].set_title("$\\undefinedcommand$")  # mathtext fails at draw time
    data, _ = mime_bundle(figure)
    assert set(data) == {"text/plain"}
    assert "figure_bundle failed; skipped" in capsys.readouterr().err


def test_a_png_says_the_size_to_show_it_at_retina_half_its_pixels(
        monkeypatch: pytest.MonkeyPatch) -> None:
    for names, scale in (("png", 1), ("retina", 2)):
        monkeypatch.setenv("PYRELUNE_FIGURE_FORMATS", names)
        data, metadata = figure_bundle(plotted(), None, None)
        png = data["image/png"]
        width, height = (int.from_bytes(png[at:at + 4], "big") for at in (16, 20))
        assert metadata == {"image/png": {"width": width // scale, "height": height // scale}}
        assert list(data) == ["image/png"]
