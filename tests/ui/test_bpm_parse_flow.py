"""The BPM tab's parse flow: the parse is shown (fields + summary) before BPM runs, a refused or
low-confidence parse waits for the user, and BPM runs on the fields as the user corrected them."""

from __future__ import annotations

import pytest
from gradio_client import Client

from augclip_demo.config import Settings
from augclip_demo.ui.evaluate import session as logic
from augclip_demo.ui.evaluate import views
from tests.support import TINY
from tests.ui.test_app import EDITS, evaluate_args, table_rows


def test_parse_for_bpm_shows_fields_and_summary_or_the_reason():
    settings = Settings.from_env(clip_model=TINY, device="cpu")
    outcome = logic.parse_for_bpm(settings, "make the ball smaller and red, then add a cat")
    assert logic.fields_of(outcome) == {"o1": "ball", "o2": "red ball", "size_state": "smaller",
                                        "position_state": "unchanged", "reference": ""}
    text = views.parse_markdown(outcome)
    assert "confidence medium" in text and "also asked, not scored by BPM: add cat" in text
    refused = logic.parse_for_bpm(settings, "make it more cinematic")
    assert logic.fields_of(refused)["o1"] == "" and refused.unparsed
    assert views.parse_markdown(refused).startswith("**No parse.**") and "BPM tab" in views.parse_markdown(refused)
    assert logic.parse_for_bpm(settings, "  ").unparsed


@pytest.fixture(scope="module")
def own(app_server) -> Client:
    client = Client(app_server["url"], verbose=False)
    client.predict(*evaluate_args(edits=EDITS[:2]), api_name="/evaluate")
    return client


@pytest.mark.slow  # starts python app.py
def test_bpm_parse_endpoint_fills_the_fields(own):
    o1, o2, size, position, reference, info = own.predict("could you make the flower pink and a bit bigger?", "rules",
                                                          TINY, api_name="/bpm_parse")
    assert (o1, o2, size, position, reference) == ("flower", "pink flower", "larger", "unchanged", "")
    assert "Parse" in info and "confidence high" in info


@pytest.mark.slow  # starts python app.py
def test_a_refused_instruction_waits_for_the_user_then_runs_on_the_fields(own):
    out = own.predict(True, "give the photo a vintage look", "rules", TINY, api_name="/bpm")
    verdict, table, bpm_info, gallery, components, o1, o2, *_rest, parse_info = out
    assert "BPM waits for you" in bpm_info and "No parse" in parse_info and "global or style edit" in parse_info
    assert (o1, o2) == ("", "") and not gallery
    out = own.predict("give the photo a vintage look", "rules", TINY, "flower", "pink flower", "unchanged",
                      "unchanged", "", api_name="/bpm_fields")
    table, report = out[1], out[11]  # (the session state is not an API output)
    rows = table_rows(table)
    assert all(isinstance(row[-1], float) for row in rows.values())
    parse = report["edits"][0]["bpm"]["parse"]
    assert (parse["o1"], parse["o2"], parse["parser"], parse["confidence"]) == ("flower", "pink flower", "manual",
                                                                                "given")


@pytest.mark.slow  # starts python app.py
def test_corrected_fields_override_the_parse_field_by_field(own):
    out = own.predict("make the flower pink", "rules", TINY, "flower", "pink dahlia", "unchanged", "unchanged", "",
                      api_name="/bpm_fields")
    parse = out[11]["edits"][0]["bpm"]["parse"]
    assert (parse["o2"], parse["parser"], parse["confidence"]) == ("pink dahlia", "rules", "given")
    assert parse["notes"][-1] == "corrected by hand: o2"
