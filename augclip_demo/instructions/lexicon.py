"""The rule parser's word lists: our own, short, and shipped with the package (no download).

Each list is a closed class the rules need to tell the parts of an instruction apart (a colour
from a noun, a pose verb from an adjective, a global edit from an object edit). Nouns are never
listed: anything that is not a known function word is taken as part of an object phrase, which
is what lets the parser handle objects it has never seen.
"""

from __future__ import annotations


def word_set(text: str) -> frozenset[str]:
    """The words of ``text`` (separated by spaces) as a set: lists stay readable in the source."""
    return frozenset(text.split())


COLORS = word_set(
    "red orange yellow green blue purple violet pink brown black white gray grey silver gold golden beige "
    "cyan magenta turquoise teal navy maroon crimson scarlet lime olive indigo lavender tan ivory bronze "
    "copper blond blonde brunette rainbow colorful colourful transparent striped spotted checkered "
    "polka-dot multicolored multicoloured emerald amber peach mint coral burgundy khaki charcoal cream"
)
MATERIALS = word_set(
    "wooden wood metal metallic steel iron glass glassy plastic stone marble paper cardboard leather "
    "fabric wool woolen woollen cotton silk denim velvet rubber ceramic porcelain clay concrete brick "
    "ice icy crystal diamond chocolate candy lego origami furry fluffy shiny matte glossy rusty golden"
)
#: Words that may precede a colour ("light blue", "bright red") and stay part of it.
COLOR_MODIFIERS = word_set("light dark bright pale deep dull vivid neon pastel hot sky baby navy royal")

#: Flat or extended surfaces: "on" such a thing means within its box, not above it.
FLAT_SURFACES = word_set(
    "screen monitor tv television display wall sign signboard board blackboard whiteboard billboard poster "
    "canvas painting picture photo frame page paper book cover shirt t-shirt tshirt jacket sweater dress "
    "door window plate tray dish road street floor ground grass lawn field beach sand snow water "
    "lake sea ocean sky bed sheet blanket carpet rug mat flag banner label card"
)

LARGER = word_set("bigger larger huger taller wider longer fatter thicker big large huge giant enormous massive "
                "gigantic higher")
SMALLER = word_set("smaller tinier shorter narrower thinner slimmer little tiny small miniature mini minuscule")

#: Verbs of a pose or action an object takes: "make the dog sit" changes the dog, not its place.
POSE_VERBS = word_set(
    "sit stand jump run walk smile laugh cry sleep lie wave dance fly swim kneel crouch squat raise lift "
    "hold wink frown eat drink read sing bark roar point hug kiss bow lean stretch yawn climb ride play "
    "look face stare gaze turn nod clap shout scream yell blink pose rest fall float hover sprint gallop "
    "crawl grin pout cross fold bend spread curl wag sniff lick chew bite kick throw catch carry wear "
    "open close hide peek rear graze perch roll sway smoke cook paint write type talk whisper show display "
    "say set rise shine glow melt sink bloom blossom wilt sail drive race bounce spin shake tilt steam gallop"
)
#: Verbs whose -ing form doubles the last consonant (sit -> sitting).
DOUBLING = word_set("sit run swim nod clap hug jog stop skip dig grin sip wag hop drop shrug pet grab chat bob set put cut "
                   "get let hit spin win begin shut trim wrap chop tap nap pat beg rub scrub plan")

NUMBER_WORDS = word_set(
    "one two three four five six seven eight nine ten eleven twelve twenty dozen dozens hundred hundreds "
    "several many few multiple numerous both all each every"
)
#: "a couple of", "a pair of": quantity nouns dropped in front of the real object.
QUANTITY_NOUNS = word_set("couple pair few bunch lot lots handful number plenty dozen dozens set group")

#: Head words that name the whole picture or one of its global qualities, never an object.
GLOBAL_NOUNS = word_set(
    "image picture photo photograph pic scene shot everything whole all lighting illumination "
    "color colors colour colours palette contrast brightness saturation exposure style styles mood atmosphere "
    "ambience ambiance tone tones tint season seasons weather time vibe vibes aesthetic aesthetics "
    "resolution quality sharpness focus hue hues temperature warmth grain noise composition perspective "
    "angle camera view filter effect effects look feel feeling lighting vignette rendering render overall "
    "it this that them everything something anything stuff things"
)
#: Adjectives of a global or style change ("make it more cinematic").
STYLE_WORDS = word_set(
    "cinematic dramatic moody vintage retro modern futuristic artistic realistic photorealistic surreal "
    "dreamy gloomy cheerful warmer cooler colder warm cool sepia monochrome grayscale greyscale "
    "desaturated saturated vibrant brighter darker sharper softer blurrier hdr noir cartoon cartoonish "
    "anime watercolor watercolour painterly sketchy impressionist cyberpunk steampunk gothic"
)
#: Verbs that change the whole picture when they name no object.
GLOBAL_VERBS = word_set(
    "brighten darken sharpen blur desaturate saturate colorize colourise colorise enhance improve fix "
    "upscale denoise restore stylize stylise retouch zoom crop rotate flip mirror filter lighten soften"
)
#: For GLOBAL_VERBS that do name an object ("darken the sky"), the attribute they give it.
VERB_ATTRIBUTES = {
    "brighten": "brighter", "darken": "darker", "sharpen": "sharper", "blur": "blurred", "desaturate": "desaturated",
    "saturate": "saturated", "colorize": "colourful", "colourise": "colourful", "colorise": "colourful",
    "lighten": "lighter", "soften": "softer",
}
