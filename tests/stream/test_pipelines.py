"""Pipelines.from_models: the cards a server or a benchmark loads."""

import re
import shutil

import pytest

from detectors.card import MODELS_DIR
from stream.pipelines import Pipelines


def test_pipelines_load_the_cards_of_the_folder_they_are_given(tmp_path):
    for pattern in ("fu_m.*", "fu_glyph.*"):
        for path in MODELS_DIR.glob(pattern):
            shutil.copy(path, tmp_path)
    pipelines = Pipelines.from_models(models_dir=tmp_path)
    try:
        assert set(pipelines.detectors) == {"m"}
    finally:
        pipelines.shutdown()


def test_a_folder_without_models_is_refused_by_name(tmp_path):
    with pytest.raises(RuntimeError, match=re.escape(f"no int8 models found in {tmp_path}")):
        Pipelines.from_models(models_dir=tmp_path)
