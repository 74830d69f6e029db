"""A synthetic world whose right answers are known: scenes of flat shapes on textured backgrounds, edits
built to be correct, partial, excessive, absent or wrong, and a writer of such sets as batch manifests.
Pure numpy and Pillow; the trained toy CLIP (``shapes:tiny``) learned this world and nothing else."""

from .concepts import BACKGROUNDS, COLOURS, CONCEPTS, POSITIONS, SHAPES, SIZES
from .edits import EDIT_KINDS, MANIFEST_ROLES, RATINGS, WorldEdit, make_edit
from .scenes import Scene, SceneObject, caption, draw_scene, object_words, random_scene, scene_phrases
from .world_sets import WORLD_DATASET, write_world

__all__ = ["BACKGROUNDS", "COLOURS", "CONCEPTS", "EDIT_KINDS", "MANIFEST_ROLES", "POSITIONS", "RATINGS", "SHAPES",
           "SIZES", "WORLD_DATASET", "Scene", "SceneObject", "WorldEdit", "caption", "draw_scene", "make_edit",
           "object_words", "random_scene", "scene_phrases", "write_world"]
