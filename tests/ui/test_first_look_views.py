"""What the page's pieces say, without a server (issue 41, points 5 and 7): BPM's headline names its edit,
columns hold their headers' words, the demo's banner is one line."""

from __future__ import annotations

from types import SimpleNamespace

import pandas as pd

from augclip_demo.ui import first_contact
from augclip_demo.ui.common import fitted_widths
from augclip_demo.ui.evaluate import views


def _panel(value: float) -> SimpleNamespace:
    return SimpleNamespace(caption=f"BPM {value:.4f} (rules parse: o1=ring -> o2=red ring)", untrained=False, notes=[])


def test_bpm_headline_names_the_picked_edit_and_gives_its_value():
    panels = [("E1 over_edit", _panel(1.249)), ("E2 unchanged", _panel(1.65)), ("E3 wrong", _panel(1.6742))]
    page = views.bpm_caption(panels, pick=2)
    assert "<b>E3 wrong: BPM 1.6742 (rules parse: o1=ring -&gt; o2=red ring)</b>" in page
    assert "Pick another edit" in page  # the other edits: how to see them
    assert "<b>E1 over_edit: BPM 1.2490" in views.bpm_caption(panels)  # no pick: the first
    assert "<b>E1 over_edit: BPM 1.2490" in views.bpm_caption(panels, pick=7)  # a pick out of range: the first
    plain = views.bpm_caption(panels, pick=1, plain=True)
    assert plain.splitlines()[0] == "E2 unchanged: BPM 1.6500 (rules parse: o1=ring -> o2=red ring)"
    assert "Pick another" not in views.bpm_caption(panels[:1])  # one edit: nothing else to pick


def test_fitted_widths_hold_each_headers_longest_word_and_cap_long_text():
    frame = pd.DataFrame({"component": ["S_modify"], "E1 ok": ["0.0910"], "E4 excessively_preserved": ["0.0832"],
                          "what it is": ["directional CLIP similarity of the crops " * 4]})
    widths = [int(w.removesuffix("px")) for w in fitted_widths(frame)]
    assert len(widths) == 4
    assert widths[2] > widths[1]  # a longer name: a wider column
    assert widths[2] >= 8 * len("excessively_preserved")  # the word fits at 8 px a character
    assert widths[3] == max(widths)  # the sentence: the widest, but capped (it wraps)
    assert widths[3] < 9 * len(frame.iloc[0, 3])


def test_the_demo_banner_is_one_line_opened_for_the_rest():
    banner = first_contact._demo_banner(first_contact.DEMO_CLIP)
    summary = banner.split("<summary>")[1].split("</summary>")[0]
    assert banner.startswith('<details class="aug-demo-on"') and "TOY DEMO" in summary and len(summary) < 160
    assert "random weights" in banner.split("</summary>")[1] and "to leave it" in banner
    assert "UNTRAINED" in first_contact._demo_banner("random:tiny") and first_contact._demo_banner("ViT-B-16/openai") == ""
