"""The one parser of client JSON (websocket text messages, ``POST /offer`` bodies)."""

import pytest

from stream.client_json import JsonError, parse_object


@pytest.mark.parametrize(
    ("data", "code", "says"),
    [
        ("not json", "bad_json", "is not valid JSON"),
        ("[1, 2]", "bad_json", "is not a JSON object"),
        (b'{"a": "\xff"}', "bad_json", "is not UTF-8"),
        ("[" * 100_000, "bad_json", "nests arrays or objects too deeply"),
        ('{"t": Infinity}', "bad_field", ": Infinity"),
        ('{"t": -Infinity}', "bad_field", ": -Infinity"),
        ('{"voting": {"hold": NaN}}', "bad_field", ": NaN"),
        ('{"t": 1e999}', "bad_field", ": 1e999"),
        ('{"t": [0, -1e400]}', "bad_field", ": -1e400"),
        ('{"seed": 1' + "0" * 400 + "}", "bad_field", "(401 characters)"),
        ('{"seed": 1' + "0" * 5000 + "}", "bad_field", "(5001 characters)"),  # past int()'s cap
    ],
    ids=lambda value: None if len(str(value)) < 40 else f"{str(value)[:20]}...",
)
def test_unusable_json_is_one_coded_error(data, code, says):
    with pytest.raises(JsonError) as caught:
        parse_object(data, "the message")
    assert caught.value.code == code and says in str(caught.value)
    assert str(caught.value).startswith("the message ")


@pytest.mark.parametrize(
    ("data", "value"),
    [
        (b'{"sdp": "v=0", "type": "offer"}', {"sdp": "v=0", "type": "offer"}),
        ('{"t": 1.5e10, "seed": -7, "x": [null]}', {"t": 1.5e10, "seed": -7, "x": [None]}),
        ('{"big": 1' + "0" * 307 + "}", {"big": 10**307}),  # still within float range
    ],
)  # fmt: skip
def test_usable_json_parses_as_usual(data, value):
    assert parse_object(data, "the message") == value
