"""Train ``shapes:tiny``: a small CLIP that learns the synthetic shapes world (augclip_demo.world) and
nothing else, contrastively, on CPU, from a fixed seed; then check it zero-shot on scenes it never saw
and write the open_clip folder the package ships (augclip_demo/inference/shipped/shapes-tiny/).

    python training/train_shapes_clip.py --out /tmp/shapes-phase-1
    python training/train_shapes_clip.py --init /tmp/shapes-phase-1 --pretrain-steps 0 --steps 2000 \
        --out /tmp/shapes-phase-2
    python training/train_shapes_clip.py --init /tmp/shapes-phase-2 --patch-size 8 --pretrain-steps 1000 \
        --steps 3500

(the shipped weights: the third command writes augclip_demo/inference/shipped/shapes-tiny/, about 100
minutes on 2 CPU cores in all; docs/world.md#the-model).

Training scenes come from the random streams ``[seed, i, 1]`` and the zero-shot check's from
``[seed, i, 2]``; ``world`` sets use ``[seed, index]``, so no world item is ever a training scene.
The weights are saved in float16 with the rows of tokens the captions never use set to zero (the
tokenizer's vocabulary is open_clip's, 49,408 tokens; the world uses a few dozen).
"""

from __future__ import annotations

import argparse
import json
import math
import time
from dataclasses import replace
from pathlib import Path

import numpy as np
import open_clip
import torch
import torch.nn.functional as F
from safetensors.torch import save_file

from augclip_demo.world import object_words
from augclip_demo.world.concepts import CONCEPTS, article
from augclip_demo.world.scenes import (
    BACKGROUND_PHRASES,
    BACKGROUND_WORDS,
    POSITION_WORDS,
    SIZES,
    Scene,
    draw_scene,
    fits,
    place_object,
    random_scene,
    scene_phrases,
    visible_colours,
)

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_OUT = ROOT / "augclip_demo" / "inference" / "shipped" / "shapes-tiny"
MODEL_CFG = {
    "embed_dim": 64,
    "vision_cfg": {"image_size": 64, "layers": 4, "width": 128, "head_width": 32, "patch_size": 16},
    "text_cfg": {"context_length": 32, "vocab_size": 49408, "width": 64, "heads": 2, "layers": 3},
}
ARCH = "shapes-tiny-vit"


def text_style(scene: Scene, rng: np.random.Generator) -> dict:
    """How one training text of ``scene`` is written: half the time one attribute phrase of it (an object's
    phrase four times in five, else the background's), else a caption (objects in a random order, each
    one's size and position sometimes left out, the background said half the time)."""
    n = len(scene.objects)
    return {"phrase": rng.random() < 0.5, "background_phrase": rng.random() < 0.2, "pick": float(rng.random()),
            "order": rng.permutation(n).tolist(), "size": (rng.random(n) < 0.7).tolist(),
            "position": (rng.random(n) < 0.7).tolist(), "background": bool(rng.random() < 0.5)}


def scene_text(scene: Scene, style: dict) -> str:
    """The text of ``scene`` written in ``style`` (:func:`text_style`); one style gives texts of two scenes
    that differ exactly where the scenes do."""
    if style["phrase"]:
        phrases = scene_phrases(scene)
        if style["background_phrase"]:
            return phrases[-1]
        return phrases[int(style["pick"] * (len(phrases) - 1))]
    parts = [object_words(scene.objects[i], size=style["size"][i], position=style["position"][i])
             for i in style["order"]]
    text = parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]
    return text + (f", {BACKGROUND_WORDS[scene.background]}" if style["background"] else "")


def changed_scene(scene: Scene, rng: np.random.Generator, concept: str | None = None, i: int | None = None) -> Scene:
    """``scene`` with one concept of one object (or the background) changed (``concept`` of object ``i`` when
    given): the text of a hard negative (a caption that is wrong in one word, as NegCLIP trains with). Never
    drawn, so nothing needs to fit."""
    if concept is None:
        concept = CHANGED_CONCEPTS[int(rng.choice(len(CHANGED_CONCEPTS), p=_CHANGE_WEIGHTS))]
    if concept == "background":
        return replace(scene, background=_pick(rng, CONCEPTS["background"], scene.background))
    if i is None or i < 0:
        i = int(rng.integers(len(scene.objects)))
    obj = scene.objects[i]
    if concept == "colour":
        return scene.with_object(i, colour=_pick(rng, CONCEPTS["colour"], obj.colour))
    if concept == "size":
        return scene.with_object(i, size=_pick(rng, CONCEPTS["size"], obj.size))
    if concept == "shape":
        return scene.with_object(i, shape=_pick(rng, CONCEPTS["shape"], *(o.shape for o in scene.objects)))
    return scene.with_object(i, position=_pick(rng, CONCEPTS["position"], *(o.position for o in scene.objects)))


def twin(scene: Scene, rng: np.random.Generator) -> tuple[Scene, str, int]:
    """A drawable copy of ``scene`` with one concept of one object (or the background) changed, the concept
    and the object's index (-1: the background). A training batch holds scenes in such pairs, so the image
    tower must tell apart two pictures that differ in one concept, and the text tower their two texts."""
    for _ in range(50):
        concept = CHANGED_CONCEPTS[int(rng.choice(len(CHANGED_CONCEPTS), p=_CHANGE_WEIGHTS))]
        if concept == "background":
            colours = {o.colour for o in scene.objects}
            options = [b for b in CONCEPTS["background"] if b != scene.background
                       and colours <= set(visible_colours(b))]
            if options:
                return replace(scene, background=_pick(rng, tuple(options)),
                               texture_seed=int(rng.integers(2**31))), concept, -1
            continue
        i = int(rng.integers(len(scene.objects)))
        obj = scene.objects[i]
        if concept == "colour":
            return scene.with_object(i, colour=_pick(rng, tuple(visible_colours(scene.background)),
                                                     *(o.colour for o in scene.objects))), concept, i
        if concept == "shape":
            return scene.with_object(i, shape=_pick(rng, CONCEPTS["shape"], *(o.shape for o in scene.objects))), \
                concept, i
        if concept == "size":
            options = [z for z in CONCEPTS["size"] if z != obj.size
                       and fits(scene.objects, replace(obj, radius=SIZES[z]), i)]
            if options:
                z = _pick(rng, tuple(options))
                return scene.with_object(i, size=z, radius=SIZES[z]), concept, i
            continue
        taken = {o.position for o in scene.objects}
        moved = [place_object(rng, obj.shape, obj.colour, obj.size, p) for p in CONCEPTS["position"] if p not in taken]
        moved = [m for m in moved if fits(scene.objects, m, i)]
        if moved:
            m = moved[int(rng.integers(len(moved)))]
            return scene.with_object(i, position=m.position, centre=m.centre), concept, i
    raise RuntimeError("no concept of this scene can change")  # pragma: no cover - never seen


def phrase_label(scene: Scene, concept: str, index: int) -> int:
    """The label (:data:`_LABELS`) that :func:`concept_phrase` of the same arguments says."""
    if index < 0:
        return _LABEL_INDEX[("background", None, scene.background)]
    obj = scene.objects[index]
    if concept in ("colour", "shape"):
        return _LABEL_INDEX[("colour", obj.shape, obj.colour)]
    return _LABEL_INDEX[(concept, obj.shape, getattr(obj, concept))]


def concept_phrase(scene: Scene, concept: str, index: int, said_after: bool = False) -> str:
    """The attribute phrase of ``scene`` that names ``concept`` of object ``index`` (the zero-shot check's
    wording; ``said_after``: a colour as "the ball is red")."""
    if index < 0:
        return BACKGROUND_PHRASES[scene.background]
    obj = scene.objects[index]
    if concept == "size":
        return f"{article(obj.size)} {obj.size} {obj.shape}"
    if concept == "position":
        return f"the {obj.shape} is {POSITION_WORDS[obj.position]}"
    if concept == "colour" and said_after:  # the attribute lists' other wording
        return f"the {obj.shape} is {obj.colour}"
    return f"{article(obj.colour)} {obj.colour} {obj.shape}"


#: The concept a hard negative changes, drawn with these weights (the background is learned first and alone).
CHANGED_CONCEPTS = ("colour", "shape", "size", "position", "background")
_CHANGE_WEIGHTS = (0.24, 0.24, 0.2, 0.24, 0.08)


def _pick(rng: np.random.Generator, choices: tuple[str, ...], *avoid: str | None) -> str:
    left = [c for c in choices if c not in avoid]
    return left[int(rng.integers(len(left)))]


#: The auxiliary head's labels: every (shape, colour), (shape, size) and (shape, position) pair and every
#: background, each present in a scene or not. Each zero-shot prompt ("a red ball", "a large ball", "the ball
#: is on the left", "a snowy background") names one of them, so the embedding learns each as a direction.
_LABELS = ([("colour", s, c) for s in CONCEPTS["shape"] for c in CONCEPTS["colour"]]
           + [("size", s, z) for s in CONCEPTS["shape"] for z in CONCEPTS["size"]]
           + [("position", s, p) for s in CONCEPTS["shape"] for p in CONCEPTS["position"]]
           + [("background", None, b) for b in CONCEPTS["background"]])
_LABEL_INDEX = {label: i for i, label in enumerate(_LABELS)}


def scene_targets(scene: Scene) -> list[float]:
    """The auxiliary head's targets for ``scene``: 1 for every label (:data:`_LABELS`) true of it, else 0."""
    targets = [0.0] * len(_LABELS)
    for obj in scene.objects:
        for concept in ("colour", "size", "position"):
            value = getattr(obj, concept)
            if value is not None:
                targets[_LABEL_INDEX[(concept, obj.shape, value)]] = 1.0
    targets[_LABEL_INDEX[("background", None, scene.background)]] = 1.0
    return targets


def auxiliary_loss(head: torch.nn.Linear, image_feats: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """Binary cross-entropy of every label, read linearly from the image embedding (before its normalisation):
    it makes the image tower encode which object has which colour, size and position from the first steps
    (the contrastive loss alone learns the background and colours first and bindings very late)."""
    return F.binary_cross_entropy_with_logits(head(image_feats), targets)


def scenes(seed: int, stream: int, count: int) -> list[Scene]:
    return [random_scene(np.random.default_rng([seed, i, stream])) for i in range(count)]


def pixels(preprocess, chosen: list[Scene]) -> torch.Tensor:
    return torch.stack([preprocess(draw_scene(s).image) for s in chosen])


def zero_shot(model, tokenizer, images: torch.Tensor, chosen: list[Scene]) -> dict[str, float]:
    """Accuracy per concept: for each object (and each scene's background) the prompt naming the true value
    must be the image's closest among the prompts that change only that concept."""
    model.eval()
    with torch.no_grad():
        feats = F.normalize(model.encode_image(images), dim=-1)
        cache: dict[str, torch.Tensor] = {}

        def embed(texts: list[str]) -> torch.Tensor:
            missing = [t for t in texts if t not in cache]
            if missing:
                for t, e in zip(missing, F.normalize(model.encode_text(tokenizer(missing)), dim=-1)):
                    cache[t] = e
            return torch.stack([cache[t] for t in texts])

        hits: dict[str, list[bool]] = {c: [] for c in CONCEPTS}
        for feat, scene in zip(feats, chosen):
            colours = [o.colour for o in scene.objects]
            for obj in scene.objects:
                tests = {
                    "colour": ([f"{article(c)} {c} {obj.shape}" for c in CONCEPTS["colour"]],
                               CONCEPTS["colour"].index(obj.colour)),
                    "size": ([f"{article(z)} {z} {obj.shape}" for z in CONCEPTS["size"]],
                             CONCEPTS["size"].index(obj.size)),
                    "position": ([f"the {obj.shape} is {POSITION_WORDS[p]}" for p in CONCEPTS["position"]],
                                 CONCEPTS["position"].index(obj.position)),
                }
                if colours.count(obj.colour) == 1:  # "a red X" names one object only when red is unique
                    tests["shape"] = ([f"{article(obj.colour)} {obj.colour} {s}" for s in CONCEPTS["shape"]],
                                      CONCEPTS["shape"].index(obj.shape))
                for concept, (prompts, truth) in tests.items():
                    hits[concept].append(int(torch.argmax(embed(prompts) @ feat)) == truth)
            prompts = [BACKGROUND_PHRASES[b] for b in CONCEPTS["background"]]
            hits["background"].append(int(torch.argmax(embed(prompts) @ feat)) == CONCEPTS["background"].index(
                scene.background))
    return {c: float(np.mean(h)) for c, h in hits.items()}


def resampled(state: dict[str, torch.Tensor], like: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """An earlier run's weights on this run's patch grid: a finer patch embedding is the coarser one's
    2 x 2 (or k x k) average times the pixels it stands for (a flat patch keeps its response), and the position
    table is the coarser grid interpolated; every other weight is kept as it is."""
    weight, new_weight = state["visual.conv1.weight"], like["visual.conv1.weight"]
    if weight.shape == new_weight.shape:
        return state
    factor = weight.shape[-1] // new_weight.shape[-1]
    state["visual.conv1.weight"] = F.avg_pool2d(weight, factor) * factor * factor
    table, cells = state["visual.positional_embedding"], like["visual.positional_embedding"].shape[0] - 1
    side, new_side = math.isqrt(table.shape[0] - 1), math.isqrt(cells)
    grid = table[1:].T.reshape(1, -1, side, side)
    grid = F.interpolate(grid, size=(new_side, new_side), mode="bicubic", align_corners=False)
    state["visual.positional_embedding"] = torch.cat([table[:1], grid.reshape(-1, cells).T])
    return state


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=1500, help="contrastive steps")
    parser.add_argument("--batch", type=int, default=128)
    parser.add_argument("--scenes", type=int, default=48000, help="training scenes (drawn once, in pairs)")
    parser.add_argument("--pretrain-steps", type=int, default=2500,
                        help="steps that train the image tower alone on the what-is-where loss, before the "
                             "contrastive steps")
    parser.add_argument("--held-out", type=int, default=600, help="scenes of the zero-shot check")
    parser.add_argument("--lr", type=float, default=1e-3)
    parser.add_argument("--negatives", type=int, default=3, help="hard negative texts per image and step")
    parser.add_argument("--auxiliary", type=float, default=1.0, help="weight of the auxiliary what-is-where loss")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--check-every", type=int, default=500, help="steps between zero-shot checks")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    parser.add_argument("--init", type=Path, help="start from the weights of an earlier run's folder (a second phase "
                        "with its own schedule); its training.json is kept in this run's record")
    parser.add_argument("--patch-size", type=int, default=MODEL_CFG["vision_cfg"]["patch_size"],
                        help="pixels per patch side; with --init from another patch size, the patch embedding and the "
                             "position table are resampled to the new grid")
    args = parser.parse_args()
    MODEL_CFG["vision_cfg"]["patch_size"] = args.patch_size
    torch.manual_seed(args.seed)
    torch.set_num_threads(args.threads)
    started = time.perf_counter()
    open_clip.factory._MODEL_CONFIGS[ARCH] = MODEL_CFG  # a config of our own, no file needed to train
    model, _, preprocess = open_clip.create_model_and_transforms(ARCH)
    tokenizer = open_clip.get_tokenizer(ARCH)
    earlier = None
    if args.init is not None:
        from safetensors.torch import load_file

        model.load_state_dict(resampled({k: v.float() for k, v in load_file(str(args.init / "open_clip_model.safetensors")).items()},
                                        model.state_dict()))
        earlier = json.loads((args.init / "training.json").read_text())
    rng = np.random.default_rng([args.seed, 3])
    bases = scenes(args.seed, 1, args.scenes // 2)
    pairs = [twin(scene, rng) for scene in bases]  # (changed scene, concept, object index)
    train = [s for base, (changed, _, _) in zip(bases, pairs) for s in (base, changed)]
    held = scenes(args.seed, 2, args.held_out)
    images, held_images = pixels(preprocess, train), pixels(preprocess, held)
    print(f"drew {len(train)} training and {len(held)} held-out scenes in {time.perf_counter() - started:.0f} s",
          flush=True)
    targets = torch.tensor([scene_targets(scene) for scene in train])
    head = torch.nn.Linear(MODEL_CFG["embed_dim"], len(_LABELS))
    token_cache: dict[str, torch.Tensor] = {}

    def tokenize(texts: list[str]) -> torch.Tensor:
        for t in set(texts) - token_cache.keys():
            token_cache[t] = tokenizer([t])[0]
        return torch.stack([token_cache[t] for t in texts])

    # the tokens an earlier phase used are the rows it kept (it zeroed the others)
    used_tokens = {int(i) for i in torch.nonzero(model.token_embedding.weight.abs().sum(1)).flatten()} if earlier else set()
    if args.pretrain_steps:  # the image tower learns what is where first: cheap steps (no text), many of them
        pretrain = torch.optim.AdamW([*model.visual.parameters(), *head.parameters()], lr=args.lr, weight_decay=0.05)
        warm = max(1, args.pretrain_steps // 10)
        pretrain_schedule = torch.optim.lr_scheduler.LambdaLR(pretrain, lambda s: min(1.0, (s + 1) / warm) * 0.5 * (
            1 + math.cos(math.pi * min(1.0, s / args.pretrain_steps))))
        model.train()
        for step in range(args.pretrain_steps):
            chosen = rng.choice(len(train), size=args.batch, replace=False)
            loss = auxiliary_loss(head, model.encode_image(images[chosen]), targets[chosen])
            pretrain.zero_grad()
            loss.backward()
            pretrain.step()
            pretrain_schedule.step()
            if step % 250 == 0 or step == args.pretrain_steps - 1:
                print(f"image step {step:5d}  loss {loss.item():.3f}  {time.perf_counter() - started:.0f} s", flush=True)
    optimiser = torch.optim.AdamW([*model.parameters(), *head.parameters()], lr=args.lr, weight_decay=0.05)
    warmup = max(1, args.steps // 10)
    schedule = torch.optim.lr_scheduler.LambdaLR(optimiser, lambda s: min(1.0, (s + 1) / warmup) * 0.5 * (
        1 + math.cos(math.pi * min(1.0, s / args.steps))))
    for step in range(args.steps):
        model.train()
        chosen_pairs = rng.choice(len(pairs), size=args.batch // 2, replace=False)
        chosen = np.stack([2 * chosen_pairs, 2 * chosen_pairs + 1], axis=1).reshape(-1)
        texts, negatives, labels, negative_labels = [], [], [], []
        for p in chosen_pairs:
            _, concept, index = pairs[p]
            style = text_style(train[2 * p], rng)
            phrase = style["phrase"]
            if not phrase:  # the caption says what differs between the pair
                style["background"] = style["background"] or concept == "background"
                if index >= 0:
                    style["size"][index] = style["size"][index] or concept == "size"
                    style["position"][index] = style["position"][index] or concept == "position"
            after = style["pick"] < 0.3
            for scene in (train[2 * p], train[2 * p + 1]):
                texts.append(concept_phrase(scene, concept, index, after) if phrase else scene_text(scene, style))
                labels.append(phrase_label(scene, concept, index) if phrase else -1)
                for _ in range(args.negatives):
                    wrong = changed_scene(scene, rng, concept if phrase else None, index if phrase else None)
                    negatives.append(concept_phrase(wrong, concept, index, after) if phrase else scene_text(wrong, style))
                    negative_labels.append(phrase_label(wrong, concept, index) if phrase else -1)
        tokens = tokenize(texts + negatives)
        used_tokens.update(int(t) for t in tokens.unique())
        image_raw = model.encode_image(images[chosen])
        image_feats = F.normalize(image_raw, dim=-1)
        text_feats = F.normalize(model.encode_text(tokens), dim=-1)
        logits = model.logit_scale.exp() * image_feats @ text_feats.T  # (batch, batch + negatives)
        # the same text can fit several images of a batch: every column whose text is equal counts as a match
        ids = {t: k for k, t in enumerate(dict.fromkeys(texts + negatives))}
        column_ids = torch.tensor([ids[t] for t in texts + negatives])
        same = (column_ids[:len(texts), None] == column_ids[None, :]).float()
        # an attribute phrase matches every image it is true of, not only its own: "a red ball" is true of
        # several images of a batch, and counting those as non-matches would teach the opposite of the truth
        said = torch.tensor(labels + negative_labels)
        true_of = targets[chosen][:, said.clamp(min=0)] * (said >= 0).float()
        same = torch.maximum(same, true_of)
        to_text = torch.sum(-(same / same.sum(1, keepdim=True)) * F.log_softmax(logits, dim=1), dim=1).mean()
        square = same[:, :len(texts)]
        to_image = torch.sum(-(square / square.sum(1, keepdim=True)) * F.log_softmax(logits[:, :len(texts)].T, dim=1),
                             dim=1).mean()
        loss = (to_text + to_image) / 2 + args.auxiliary * auxiliary_loss(head, image_raw, targets[chosen])
        optimiser.zero_grad()
        loss.backward()
        optimiser.step()
        schedule.step()
        with torch.no_grad():
            model.logit_scale.clamp_(0, math.log(100))
        if step % 100 == 0 or step == args.steps - 1:
            print(f"step {step:5d}  loss {loss.item():.3f}  {time.perf_counter() - started:.0f} s", flush=True)
        if step % args.check_every == args.check_every - 1:
            print("  held-out zero-shot:", zero_shot(model, tokenizer, held_images, held), flush=True)
    state = {k: v.detach().clone() for k, v in model.state_dict().items()}
    unused = torch.ones(state["token_embedding.weight"].shape[0], dtype=torch.bool)
    unused[sorted(used_tokens)] = False
    state["token_embedding.weight"][unused] = 0
    model.load_state_dict(state)
    accuracy = zero_shot(model, tokenizer, held_images, held)
    print("held-out zero-shot accuracy (shipped weights):", accuracy, flush=True)
    args.out.mkdir(parents=True, exist_ok=True)
    save_file({k: v.to(torch.float16).contiguous() for k, v in state.items()}, str(args.out / "open_clip_model.safetensors"))
    config = {"model_cfg": MODEL_CFG, "preprocess_cfg": {"mean": list(open_clip.OPENAI_DATASET_MEAN),
                                                         "std": list(open_clip.OPENAI_DATASET_STD),
                                                         "interpolation": "bicubic", "resize_mode": "shortest"}}
    (args.out / "open_clip_config.json").write_text(json.dumps(config, indent=2) + "\n")
    (args.out / "training.json").write_text(json.dumps({
        "script": "training/train_shapes_clip.py", "steps": args.steps, "batch": args.batch, "scenes": args.scenes,
        "held_out": args.held_out, "lr": args.lr, "seed": args.seed, "negatives": args.negatives, "auxiliary": args.auxiliary,
        "pretrain_steps": args.pretrain_steps, "patch_size": args.patch_size, "threads": args.threads,
        "torch": torch.__version__, "open_clip": open_clip.__version__,
        "seconds": round(time.perf_counter() - started), "held_out_zero_shot": accuracy,
        "tokens_used": len(used_tokens), "started_from": earlier}, indent=2) + "\n")
    print(f"wrote {args.out} in {time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
