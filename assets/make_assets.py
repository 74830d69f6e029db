"""Make the example inputs in ``assets/examples/`` (deterministic; run from the repo root).

    python assets/make_assets.py

Sources are sample images shipped inside installed packages (see assets/README.md for licenses)
and one scene drawn from scratch. For every example the script writes:

* ``source.png`` and the edits, each with a role:
  ``gt`` a well-made edit (what the instruction asks, nothing else),
  ``partial`` a weaker / incomplete version of it,
  ``ep`` excessively preserved: the source plus Gaussian noise (sigma 2/255, seed 0), ignoring the text,
  ``em`` excessively modified: a new picture drawn from the target text alone, ignoring the source;
* ``attributes.json``: hand-written short source / target attributes in the format every provider saves;
* ``example.json``: target text, source text, instruction, BPM objects and the edit list;
* ``../manifest.jsonl``: all examples as a batch manifest (paths relative to ``assets/examples``).
"""

from __future__ import annotations

import json
import math
import os
from pathlib import Path

import numpy as np
from PIL import Image, ImageDraw, ImageFilter

OUT = Path(__file__).resolve().parent / "examples"
WIDTH = 320
EP_SIGMA = 2.0 / 255.0


def sklearn_image(name: str) -> Image.Image:
    import sklearn.datasets

    path = Path(os.path.dirname(sklearn.datasets.__file__)) / "images" / name
    return Image.open(path).convert("RGB")


def matplotlib_image(name: str) -> Image.Image:
    import matplotlib.cbook

    return Image.open(matplotlib.cbook.get_sample_data(name)).convert("RGB")


def fit_width(image: Image.Image, width: int = WIDTH) -> Image.Image:
    height = round(image.height * width / image.width)
    return image.resize((width, height), Image.LANCZOS)


def to_array(image: Image.Image) -> np.ndarray:
    return np.asarray(image, dtype=np.float64) / 255.0


def to_image(array: np.ndarray) -> Image.Image:
    return Image.fromarray(np.clip(np.rint(array * 255.0), 0, 255).astype(np.uint8))


def excessively_preserved(source: Image.Image, seed: int = 0) -> Image.Image:
    rng = np.random.default_rng(seed)
    return to_image(to_array(source) + rng.normal(0.0, EP_SIGMA, size=to_array(source).shape))


def hue_shift(image: Image.Image, mask: np.ndarray, target_hue: float, strength: float) -> Image.Image:
    """Move the hue of masked pixels toward ``target_hue`` (0-255 scale) by ``strength`` in [0, 1]."""
    hsv = np.asarray(image.convert("HSV"), dtype=np.float64)
    hue = hsv[..., 0]
    delta = ((target_hue - hue + 128) % 256) - 128
    hsv[..., 0] = np.where(mask, (hue + strength * delta) % 256, hue)
    return Image.fromarray(hsv.astype(np.uint8), "HSV").convert("RGB")


def soft(mask: np.ndarray, radius: float = 1.5) -> np.ndarray:
    blurred = Image.fromarray((mask * 255).astype(np.uint8)).filter(ImageFilter.GaussianBlur(radius))
    return np.asarray(blurred, dtype=np.float64)[..., None] / 255.0


# ---------------------------------------------------------------- example 1: flower colour
def flower() -> dict:
    source = fit_width(sklearn_image("flower.jpg"))
    hsv = np.asarray(source.convert("HSV"), dtype=np.float64)
    orange = (hsv[..., 0] > 5) & (hsv[..., 0] < 35) & (hsv[..., 1] > 90) & (hsv[..., 2] > 90)
    gt = hue_shift(source, orange, target_hue=235, strength=1.0)   # pink-magenta
    partial = hue_shift(source, orange, target_hue=235, strength=0.45)
    em = Image.new("RGB", source.size, (246, 240, 232))
    draw = ImageDraw.Draw(em)
    cx, cy = source.width * 0.62, source.height * 0.45
    for ring, (radius, color) in enumerate([(95, (214, 70, 140)), (72, (230, 105, 165)), (48, (244, 150, 196))]):
        for k in range(14 + 4 * ring):
            angle = 2 * math.pi * k / (14 + 4 * ring) + ring * 0.2
            px, py = cx + 0.55 * radius * math.cos(angle), cy + 0.55 * radius * math.sin(angle)
            r = radius * 0.38
            draw.ellipse((px - r, py - r, px + r, py + r), fill=color, outline=(170, 40, 100))
    draw.ellipse((cx - 16, cy - 16, cx + 16, cy + 16), fill=(250, 210, 90))
    draw.rectangle((cx - 3, cy + 95, cx + 3, source.height), fill=(60, 140, 60))
    return {
        "id": "flower-pink",
        "images": {"source": source, "gt": gt, "partial": partial, "ep": excessively_preserved(source), "em": em},
        "target_text": "a pink dahlia flower",
        "source_text": "an orange dahlia flower",
        "instruction": "make the flower pink",
        "bpm": {"o1": "orange flower", "o2": "pink flower"},
        "source_attributes": ["dahlia is orange", "round flower head", "layered petals", "petals are cupped",
                              "dark green background", "blurred leaves", "a second bud at the bottom",
                              "soft daylight"],
        "target_attributes": ["dahlia is pink", "pink petals", "magenta tones", "a pink flower head"],
    }


# ---------------------------------------------------------------- example 2: pagoda at night
def pagoda() -> dict:
    source = fit_width(sklearn_image("china.jpg"))
    a = to_array(source)
    height = a.shape[0]
    rows = np.linspace(0, 1, height)[:, None]
    brightness, blueness = a.mean(axis=2), a[..., 2] - a[..., 0]
    sky = (brightness > 0.62) & (blueness > -0.02) & (rows < 0.55)
    sky = soft(sky.astype(float), 2.0)
    night_sky = np.stack([0.03 + 0.05 * rows[:, 0], 0.05 + 0.07 * rows[:, 0], 0.16 + 0.12 * rows[:, 0]], axis=1)
    night_sky = np.repeat(night_sky[:, None, :], a.shape[1], axis=1)

    def night(strength: float) -> Image.Image:
        dark = a * np.array([0.30, 0.34, 0.52]) ** strength  # darker and bluer
        out = (1 - strength * sky) * dark + strength * sky * night_sky
        return to_image(out)

    gt = night(1.0)
    draw = ImageDraw.Draw(gt)
    draw.ellipse((250, 18, 272, 40), fill=(250, 246, 220))  # the moon
    # lit windows: warm dots on the pagoda's red floors (where the source is red and mid-bright)
    red = (a[..., 0] > 0.45) & (a[..., 1] < 0.35) & (rows < 0.85)
    lit = to_array(gt)
    lit[red] = lit[red] * 0.3 + np.array([0.95, 0.68, 0.30]) * 0.7
    gt = to_image(lit)
    partial = night(0.5)
    em = Image.new("RGB", source.size)
    em_a = np.zeros((source.height, source.width, 3))
    em_a[:] = night_sky[:, :1, :] * 1.2
    em = to_image(em_a)
    draw = ImageDraw.Draw(em)
    rng = np.random.default_rng(3)
    for x, y in rng.uniform([0, 0], [source.width, source.height * 0.5], size=(40, 2)):
        draw.point((x, y), fill=(230, 230, 255))
    draw.ellipse((40, 22, 70, 52), fill=(250, 246, 220))
    draw.polygon([(0, source.height), (110, 120), (200, 165), (320, 105), (320, source.height)], fill=(10, 14, 24))
    for level in range(4):  # a generic tower silhouette, not the source's pagoda
        y0 = 150 - level * 28
        draw.polygon([(190 - 40 + level * 6, y0), (190 + 40 - level * 6, y0), (190, y0 - 26)], fill=(20, 20, 30))
        draw.rectangle((176 + level * 3, y0, 204 - level * 3, y0 + 10), fill=(200, 150, 60))
    return {
        "id": "pagoda-night",
        "images": {"source": source, "gt": gt, "partial": partial, "ep": excessively_preserved(source), "em": em},
        "target_text": "a pagoda on a hill at night",
        "source_text": "a pagoda on a hill on a sunny day",
        "instruction": "make it night",
        "bpm": {"o1": None, "o2": None},
        "source_attributes": ["a tall pagoda", "red and green pagoda floors", "golden roof top", "bright blue sky",
                              "sunny daylight", "a lake in the distance", "green trees in front",
                              "hazy mountains"],
        "target_attributes": ["dark night sky", "moon in the sky", "lit windows", "dim blue light",
                              "a pagoda at night"],
    }


# ---------------------------------------------------------------- example 3: portrait sunglasses
LENSES = [(186, 176, 266, 228), (282, 170, 356, 222)]  # in the 512 x 600 original


def portrait() -> dict:
    original = matplotlib_image("grace_hopper.jpg")
    scale = WIDTH / original.width
    source = fit_width(original)

    def sunglasses(opacity: float) -> Image.Image:
        overlay = Image.new("L", source.size, 0)
        draw = ImageDraw.Draw(overlay)
        for x0, y0, x1, y1 in LENSES:
            draw.ellipse((x0 * scale, y0 * scale, x1 * scale, y1 * scale), fill=255)
        alpha = soft(np.asarray(overlay, dtype=np.float64) / 255.0, 1.0) * opacity
        tint = np.array([0.05, 0.05, 0.07])
        return to_image(to_array(source) * (1 - alpha) + tint * alpha)

    gt = sunglasses(0.92)
    partial = sunglasses(0.45)
    em = Image.new("RGB", source.size, (120, 190, 230))
    draw = ImageDraw.Draw(em)
    w, h = source.size
    draw.rectangle((0, h * 0.7, w, h), fill=(236, 214, 160))  # a beach
    draw.ellipse((w * 0.3, h * 0.18, w * 0.7, h * 0.62), fill=(225, 180, 150))  # a different, drawn face
    draw.ellipse((w * 0.27, h * 0.12, w * 0.73, h * 0.3), fill=(90, 60, 40))  # hair
    for cx in (w * 0.42, w * 0.58):
        draw.ellipse((cx - 26, h * 0.34, cx + 26, h * 0.42), fill=(15, 15, 20))
    draw.line((w * 0.46, h * 0.38, w * 0.54, h * 0.38), fill=(15, 15, 20), width=4)
    draw.arc((w * 0.42, h * 0.46, w * 0.58, h * 0.54), 20, 160, fill=(150, 60, 60), width=4)
    draw.rectangle((w * 0.25, h * 0.62, w * 0.75, h), fill=(230, 90, 60))
    return {
        "id": "portrait-sunglasses",
        "images": {"source": source, "gt": gt, "partial": partial, "ep": excessively_preserved(source), "em": em},
        "target_text": "a portrait of an elderly woman in a navy uniform wearing dark sunglasses",
        "source_text": "a portrait of an elderly woman in a navy uniform wearing glasses",
        "instruction": "turn her glasses into dark sunglasses",
        "bpm": {"o1": "glasses", "o2": "dark sunglasses"},
        "source_attributes": ["an elderly woman", "clear glasses", "navy officer cap", "dark navy uniform",
                              "white collar and black tie", "ribbons on the chest", "an american flag behind",
                              "short grey hair", "a slight smile"],
        "target_attributes": ["dark sunglasses", "tinted lenses", "eyes hidden behind dark glasses",
                              "a woman wearing sunglasses"],
    }


# ---------------------------------------------------------------- example 4: drawn shapes (add an object)
def shapes() -> dict:
    size = (WIDTH, 240)

    def scene(ball: float | None, background=(236, 232, 222)) -> Image.Image:
        image = Image.new("RGB", size, background)
        draw = ImageDraw.Draw(image)
        draw.rectangle((0, 170, size[0], size[1]), fill=(150, 110, 80))  # table
        draw.rectangle((180, 95, 250, 170), fill=(200, 40, 40), outline=(120, 20, 20), width=3)  # red box
        if ball is not None:
            r = 30 * ball
            draw.ellipse((110 - r, 140 - r, 110 + r, 140 + r), fill=(40, 80, 210), outline=(20, 40, 120), width=3)
        return image

    source = scene(None)
    em = Image.new("RGB", size, (30, 30, 30))
    draw = ImageDraw.Draw(em)
    draw.ellipse((100, 60, 220, 180), fill=(40, 80, 210))
    return {
        "id": "shapes-add-ball",
        "images": {"source": source, "gt": scene(1.0), "partial": scene(0.45), "ep": excessively_preserved(source),
                   "em": em},
        "target_text": "a blue ball to the left of a red box on a wooden table",
        "source_text": "a red box on a wooden table",
        "instruction": "add a blue ball to the left of the red box",
        "bpm": {"o1": None, "o2": "blue ball"},
        "source_attributes": ["a red box", "box has a dark red outline", "a wooden table", "beige wall",
                              "box stands on the table", "plain background"],
        "target_attributes": ["a blue ball", "ball left of the box", "ball on the table", "round blue object"],
    }


FILE_NAMES = {"gt": "well_edited.png", "partial": "partial_edit.png", "ep": "excessively_preserved.png",
              "em": "excessively_modified.png"}
ROLE_NAMES = {"gt": "well edited", "partial": "partial edit", "ep": "excessively preserved",
              "em": "excessively modified"}


def write_example(example: dict) -> dict:
    folder = OUT / example["id"]
    folder.mkdir(parents=True, exist_ok=True)
    edits = []
    for role, image in example["images"].items():
        filename = "source.png" if role == "source" else FILE_NAMES[role]
        image.save(folder / filename, optimize=True)
        if role != "source":
            edits.append({"path": f"{example['id']}/{filename}", "name": ROLE_NAMES[role],
                          "role": "candidate" if role == "partial" else role})
    attributes = {
        "source_attributes": example["source_attributes"],
        "target_attributes": example["target_attributes"],
        "provenance": {"provider": "manual", "fidelity": "hand-written for this example",
                       "extra": {"note": "short attributes, as the paper's Table 8 recommends"}},
    }
    (folder / "attributes.json").write_text(json.dumps(attributes, indent=2) + "\n")
    item = {
        "id": example["id"],
        "source": f"{example['id']}/source.png",
        "target_text": example["target_text"],
        "source_text": example["source_text"],
        "instruction": example["instruction"],
        "edits": edits,
        "attributes": f"{example['id']}/attributes.json",
        # The objects an ideal BPM parse names (kept under "meta": the manifest's free-form field).
        "meta": {"bpm_objects": example["bpm"]},
    }
    (folder / "example.json").write_text(json.dumps(item, indent=2) + "\n")
    return item


#: The world examples (``augclip-demo world``'s items 0-2 of seed 0, one per kind: not chosen by any score).
WORLD_KINDS = ("recolour", "move", "replace")
WORLD_NAMES = {"correct": "correct", "partial": "partial", "over_edit": "over-edit", "unchanged": "unchanged",
               "wrong": "wrong"}


def world_examples() -> list[dict]:
    """Three items of the synthetic world, each with its five constructed edits, object masks and true
    attribute phrases, for the demo of the toy model ``shapes:tiny``."""
    import shutil
    import tempfile

    from augclip_demo.world import write_world

    items = []
    with tempfile.TemporaryDirectory() as tmp:
        manifest = write_world(tmp, items=len(WORLD_KINDS), seed=0, kinds=WORLD_KINDS)
        for line in manifest.read_text().splitlines():
            record = json.loads(line)
            folder_name = f"world-{record['meta']['world']['kind']}"
            folder = OUT / folder_name
            if folder.exists():
                shutil.rmtree(folder)
            shutil.copytree(Path(tmp) / "images" / record["id"], folder)
            record = json.loads(line.replace(f"images/{record['id']}/", f"{folder_name}/"))
            record["id"] = folder_name
            attributes = {
                "source_attributes": record["attributes"]["source"],
                "target_attributes": record["attributes"]["target"],
                "provenance": {"provider": "manual", "fidelity": "the world's own attribute phrases, true by "
                               "construction", "extra": {"note": "augclip-demo world, seed 0"}},
            }
            (folder / "attributes.json").write_text(json.dumps(attributes, indent=2) + "\n")
            record["attributes"] = f"{folder_name}/attributes.json"
            for edit in record["edits"]:
                edit["name"] = WORLD_NAMES[edit["name"]]
            (folder / "example.json").write_text(json.dumps(record, indent=2) + "\n")
            items.append(record)
    return items


def main() -> None:
    items = [write_example(make()) for make in (flower, pagoda, portrait, shapes)] + world_examples()
    with open(OUT / "manifest.jsonl", "w") as handle:
        for item in items:
            handle.write(json.dumps(item) + "\n")
    print(f"wrote {len(items)} examples to {OUT}")


if __name__ == "__main__":
    main()
