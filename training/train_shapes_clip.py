"""Train ``shapes:tiny``: a small CLIP that learns the synthetic shapes world (augclip_demo.world) and
nothing else, contrastively, on CPU, from a fixed seed; then check it zero-shot on scenes it never saw
and write the open_clip folder the package ships (augclip_demo/inference/shipped/shapes-tiny/).

    python training/train_shapes_clip.py [--steps 2500] [--out augclip_demo/inference/shipped/shapes-tiny]

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
    Scene,
    draw_scene,
    random_scene,
    scene_phrases,
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


def changed_scene(scene: Scene, rng: np.random.Generator) -> Scene:
    """``scene`` with one concept of one object (or the background) changed: the text of a hard negative
    (a caption that is wrong in one word, as NegCLIP trains with). Never drawn, so nothing needs to fit."""
    concept = CHANGED_CONCEPTS[int(rng.choice(len(CHANGED_CONCEPTS), p=_CHANGE_WEIGHTS))]
    if concept == "background":
        return replace(scene, background=_pick(rng, CONCEPTS["background"], scene.background))
    i = int(rng.integers(len(scene.objects)))
    obj = scene.objects[i]
    if concept == "colour":
        return scene.with_object(i, colour=_pick(rng, CONCEPTS["colour"], obj.colour))
    if concept == "size":
        return scene.with_object(i, size=_pick(rng, CONCEPTS["size"], obj.size))
    if concept == "shape":
        return scene.with_object(i, shape=_pick(rng, CONCEPTS["shape"], *(o.shape for o in scene.objects)))
    return scene.with_object(i, position=_pick(rng, CONCEPTS["position"], *(o.position for o in scene.objects)))


#: The concept a hard negative changes, drawn with these weights (the background is learned first and alone).
CHANGED_CONCEPTS = ("colour", "shape", "size", "position", "background")
_CHANGE_WEIGHTS = (0.24, 0.24, 0.2, 0.24, 0.08)


def _pick(rng: np.random.Generator, choices: tuple[str, ...], *avoid: str | None) -> str:
    left = [c for c in choices if c not in avoid]
    return left[int(rng.integers(len(left)))]


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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=2000)
    parser.add_argument("--batch", type=int, default=128)
    parser.add_argument("--scenes", type=int, default=16000, help="training scenes (drawn once)")
    parser.add_argument("--held-out", type=int, default=600, help="scenes of the zero-shot check")
    parser.add_argument("--lr", type=float, default=1e-3)
    parser.add_argument("--negatives", type=int, default=3, help="hard negative texts per image and step")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--check-every", type=int, default=500, help="steps between zero-shot checks")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    parser.add_argument("--init", type=Path, help="start from the weights of an earlier run's folder (a second phase "
                        "with its own schedule); its training.json is kept in this run's record")
    args = parser.parse_args()
    torch.manual_seed(args.seed)
    torch.set_num_threads(args.threads)
    started = time.perf_counter()
    open_clip.factory._MODEL_CONFIGS[ARCH] = MODEL_CFG  # a config of our own, no file needed to train
    model, _, preprocess = open_clip.create_model_and_transforms(ARCH)
    tokenizer = open_clip.get_tokenizer(ARCH)
    earlier = None
    if args.init is not None:
        from safetensors.torch import load_file

        model.load_state_dict({k: v.float() for k, v in load_file(str(args.init / "open_clip_model.safetensors")).items()})
        earlier = json.loads((args.init / "training.json").read_text())
    train = scenes(args.seed, 1, args.scenes)
    held = scenes(args.seed, 2, args.held_out)
    images, held_images = pixels(preprocess, train), pixels(preprocess, held)
    print(f"drew {len(train)} training and {len(held)} held-out scenes in {time.perf_counter() - started:.0f} s",
          flush=True)
    rng = np.random.default_rng([args.seed, 3])
    # the tokens an earlier phase used are the rows it kept (it zeroed the others)
    used_tokens = {int(i) for i in torch.nonzero(model.token_embedding.weight.abs().sum(1)).flatten()} if earlier else set()
    optimiser = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=0.05)
    warmup = max(1, args.steps // 10)
    schedule = torch.optim.lr_scheduler.LambdaLR(optimiser, lambda s: min(1.0, (s + 1) / warmup) * 0.5 * (
        1 + math.cos(math.pi * min(1.0, s / args.steps))))
    for step in range(args.steps):
        model.train()
        chosen = rng.choice(len(train), size=args.batch, replace=False)
        styles = [text_style(train[i], rng) for i in chosen]
        texts = [scene_text(train[i], style) for i, style in zip(chosen, styles)]
        # each image's hard negatives: its text with one concept changed (extra columns of the image -> text loss)
        negatives = [scene_text(changed_scene(train[i], rng), style) for i, style in zip(chosen, styles)
                     for _ in range(args.negatives)]
        tokens = tokenizer(texts + negatives)
        used_tokens.update(int(t) for t in tokens.unique())
        image_feats = F.normalize(model.encode_image(images[chosen]), dim=-1)
        text_feats = F.normalize(model.encode_text(tokens), dim=-1)
        logits = model.logit_scale.exp() * image_feats @ text_feats.T  # (batch, batch + negatives)
        # the same text can fit several images of a batch: every column whose text is equal counts as a match
        same = torch.tensor([[a == b for b in texts + negatives] for a in texts], dtype=torch.float32)
        to_text = torch.sum(-(same / same.sum(1, keepdim=True)) * F.log_softmax(logits, dim=1), dim=1).mean()
        square = same[:, :len(texts)]
        to_image = torch.sum(-(square / square.sum(1, keepdim=True)) * F.log_softmax(logits[:, :len(texts)].T, dim=1),
                             dim=1).mean()
        loss = (to_text + to_image) / 2
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
        "held_out": args.held_out, "lr": args.lr, "seed": args.seed, "negatives": args.negatives, "threads": args.threads,
        "torch": torch.__version__, "open_clip": open_clip.__version__,
        "seconds": round(time.perf_counter() - started), "held_out_zero_shot": accuracy,
        "tokens_used": len(used_tokens), "started_from": earlier}, indent=2) + "\n")
    print(f"wrote {args.out} in {time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
