"""Exporting a supernet (training-only code: skipped without torch)."""

from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from detectors.card import (  # noqa: E402
    MODELS_DIR,
    TUNED_FIELDS,
    TUNED_PROVENANCE,
    read_card,
    read_card_fields,
)
from detectors.train.export import THRESHOLD, main  # noqa: E402
from detectors.train.model import FuNet  # noqa: E402
from detectors.train.train import make_parser  # noqa: E402


@pytest.mark.parametrize("tuned_from", [None, MODELS_DIR])
def test_new_cards_start_from_the_tuned_fields_of_the_cards_they_replace(
    tmp_path: Path, tuned_from: Path | None
) -> None:
    checkpoint = tmp_path / "supernet.pt"
    args = vars(make_parser().parse_args([]))
    torch.save({"model": FuNet().state_dict(), "args": args, "steps": 0}, checkpoint)
    out = tmp_path / "cards"
    more = [] if tuned_from is None else ["--tuned-from", str(tuned_from)]
    command = ["--checkpoint", str(checkpoint), "--out", str(out), "--tiers", "m"]
    main([*command, "--calibration", "2", *more])
    for precision in ("fp32", "int8"):
        name = f"fu_m.{precision}.json"
        written = read_card_fields(out / name)
        card = read_card(out / name)
        if tuned_from is None:
            assert card.threshold == THRESHOLD and card.zoom is None and card.vote == {}
        else:
            shipped = read_card_fields(tuned_from / name)
            assert {k: written.get(k) for k in TUNED_FIELDS} == {
                k: shipped.get(k) for k in TUNED_FIELDS
            }
            why = {k: shipped["provenance"][k] for k in TUNED_PROVENANCE}
            assert written["provenance"] | why == written["provenance"]  # and why they were chosen
            assert written["provenance"]["training"]["steps"] == 0  # the rest is the new model's
            # The glyph check's card and files come along: the new cards load as they are
            assert card.glyph_path is not None and card.glyph_path.parent == out
            assert card.glyph_path.read_bytes() == (tuned_from / card.glyph_path.name).read_bytes()
            glyph_card = read_card_fields(out / written["glyph"]["card"])
            assert (out / glyph_card["fp32_model"]).exists()


def test_a_wider_teacher_exports_with_its_channels_on_the_card(tmp_path: Path) -> None:
    cards = {}
    for width_scale in (1.0, 2.0):
        args = vars(make_parser().parse_args(["--width-scale", str(width_scale)]))
        state = FuNet(width_scale=width_scale).state_dict()
        checkpoint = tmp_path / f"x{width_scale}.pt"
        torch.save({"model": state, "args": args, "steps": 0}, checkpoint)
        out = tmp_path / f"cards{width_scale}"
        main(["--checkpoint", str(checkpoint), "--out", str(out), "--tiers", "s",
              "--calibration", "2"])  # fmt: skip
        cards[width_scale] = read_card_fields(out / "fu_s.fp32.json")
    assert 3.5 < cards[2.0]["macs"] / cards[1.0]["macs"] < 4.5
    described = {w: card["provenance"]["training"]["supernet"] for w, card in cards.items()}
    assert described[2.0].endswith("channels x2.0 (a teacher)")
    assert "teacher" not in described[1.0]
