"""The same inputs give the same numbers at torch thread counts 1 and 2 (issue 45: a Ray actor runs one thread,
a local run as many as the machine has): the unedited-region measures and the region models' passes HATIE and
BPM measure with."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pytest
import torch
from PIL import Image

from tests.support import ROOT

TOLERANCE = 1e-9


@contextlib.contextmanager
def _threads(count: int) -> Iterator[None]:
    before = torch.get_num_threads()
    torch.set_num_threads(count)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def _at_one_and_two_threads(compute: Callable[[], Any]) -> tuple[Any, Any]:
    with _threads(1):
        one = compute()
    with _threads(2):
        two = compute()
    return one, two


@pytest.mark.parametrize("height, width", [(120, 160), (150, 200)])
def test_unedited_measures_do_not_move_with_the_thread_count(height, width):
    """PSNR, MSE and SSIM of one pair at 1 and 2 threads (torch's float32 means of over 32768 values split among
    the threads: SSIM moved by 3e-8 at 120 x 160 px, PSNR by 1e-6 at 150 x 200 px), and each within float32
    rounding of torchmetrics' own functions."""
    from torchmetrics.functional.image import peak_signal_noise_ratio, structural_similarity_index_measure
    from torchmetrics.functional.regression import mean_squared_error

    from augclip_demo.inference.image_measures import unedited_measures

    rng = np.random.default_rng(height)
    source = Image.fromarray((rng.random((height, width, 3)) * 255).astype(np.uint8))
    edited = Image.fromarray((rng.random((height, width, 3)) * 255).astype(np.uint8))
    mask = np.zeros((height, width), bool)
    mask[: height // 4] = True
    one, two = _at_one_and_two_threads(lambda: unedited_measures(source, edited, mask))
    keys = ("psnr_unedited", "mse_unedited", "ssim_unedited")
    assert {key: abs(one[key] - two[key]) for key in keys} == {key: pytest.approx(0, abs=TOLERANCE) for key in keys}
    keep = (~mask)[..., None]
    a, b = ([torch.from_numpy(np.ascontiguousarray((np.asarray(image, np.float64) / 255 * keep).transpose(2, 0, 1),
                                                   dtype=np.float32))[None] for image in (source, edited)])
    assert one["mse_unedited"] == pytest.approx(float(mean_squared_error(b, a)), rel=1e-6)
    assert one["psnr_unedited"] == pytest.approx(float(peak_signal_noise_ratio(b, a, data_range=1.0)), rel=1e-6)
    assert one["ssim_unedited"] == pytest.approx(float(structural_similarity_index_measure(b, a, data_range=1.0)),
                                                 abs=1e-6)


def test_thread_independent_matmuls_give_a_seven_row_product_the_same_bits():
    """SAM's mask decoder multiplies 7 tokens; torch's own CPU kernel gave such a product other bits at 2
    threads on the test machine (3.8e-6 at 7 x 32 -> 32), oneDNN's do not."""
    from augclip_demo.inference.cpu_matmul import onednn_available, thread_independent_matmuls

    if not onednn_available():
        pytest.skip("this torch has no oneDNN float32 linear kernel on this CPU")
    generator = torch.Generator().manual_seed(7)
    for rows, inner, outer in [(5, 32, 32), (7, 32, 32), (7, 256, 2048), (9, 1024, 256)]:
        x, weight = torch.randn(rows, inner, generator=generator), torch.randn(outer, inner, generator=generator)
        bias = torch.randn(outer, generator=generator)

        def product(x: torch.Tensor = x, weight: torch.Tensor = weight, bias: torch.Tensor = bias) -> torch.Tensor:
            with thread_independent_matmuls(torch.device("cpu")):
                return torch.nn.functional.linear(x, weight, bias)
        one, two = _at_one_and_two_threads(product)
        assert torch.equal(one, two), (rows, inner, outer)
        exact = x.double() @ weight.double().T + bias.double()  # the product itself, in float64
        assert torch.allclose(one.double(), exact, atol=1e-4)


def test_sam_mask_logits_do_not_move_with_the_thread_count():
    """The segmenter's mask decoder (SAM, random:tiny) on a real example image at 1 and 2 threads: the logits
    that its masks threshold are the same (they moved by 1e-7 at 2 threads, and one pixel of a HATIE mask
    flipped with them)."""
    from augclip_demo.inference.segmenter import SamSegmenter

    segmenter = SamSegmenter("random:tiny", device="cpu").load()
    logits: list[torch.Tensor] = []
    hook = segmenter._model.mask_decoder.register_forward_hook(lambda _m, _i, out: logits.append(out[0].clone()))
    image = Image.open(ROOT / "assets" / "examples" / "flower-pink" / "source.png")
    boxes = [np.array([[60.0, 20.0, 260.0, 200.0]])]  # one box: 7 decoder tokens (two would make 14 rows)
    try:
        one, two = _at_one_and_two_threads(lambda: segmenter.segment([image], boxes))
    finally:
        hook.remove()
    assert len(logits) == 2 and logits[0].shape == logits[1].shape
    assert float((logits[0] - logits[1]).abs().max()) <= TOLERANCE
    assert all(np.array_equal(a, b) for a, b in zip(one[0], two[0]))
