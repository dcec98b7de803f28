import argparse

import pytest

from stream.cli_types import non_negative_int, positive_int, positive_number


@pytest.mark.parametrize(
    ("parse", "text", "value"),
    [
        (positive_number, "15", 15.0),
        (positive_number, "0.5", 0.5),
        (positive_number, "0", None),
        (positive_number, "-5", None),
        (positive_number, "nan", None),
        (positive_number, "inf", None),
        (positive_number, "x", None),
        (positive_int, "3", 3),
        (positive_int, "1", 1),
        (positive_int, "0", None),
        (positive_int, "-2", None),
        (positive_int, "2.5", None),
        (non_negative_int, "0", 0),
        (non_negative_int, "500", 500),
        (non_negative_int, "-1", None),
        (non_negative_int, "x", None),
    ],
)
def test_positive_number_options(parse, text, value):
    if value is None:
        with pytest.raises(argparse.ArgumentTypeError):
            parse(text)
    else:
        assert parse(text) == value
