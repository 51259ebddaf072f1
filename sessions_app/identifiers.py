"""Session names and plan ids, and the exact formats every path component is checked against."""

from __future__ import annotations

import re
import secrets

ADJECTIVES = """
able agile amber ample brave bright brisk calm candid clever cosmic crisp daring deft eager
early earnest fair fancy fast fierce fluent frank gentle giddy glad golden grand hardy hasty
honest humble jolly keen kind lively loyal lucid lucky merry mighty modest nimble noble
patient plucky polite proud quick quiet rapid ready regal robust rustic sage sharp shy silent
sleek smart snug solid spry steady stoic sturdy sunny swift tidy tough true upbeat vivid warm
wise witty young zany zesty
""".split()

COLOURS = """
amber aqua azure beige black blue bronze brown cedar cherry cobalt copper coral cream crimson
cyan denim ebony emerald fawn gold green grey hazel indigo ivory jade khaki lemon lilac lime
magenta maroon mauve mint navy ochre olive onyx orange pearl pink plum purple red rose ruby
rust saffron sage salmon sand scarlet sepia silver slate tan teal topaz umber violet white
""".split()

ANIMALS = """
alpaca badger beaver bison bobcat camel caribou cheetah condor corgi coyote crane cricket
dingo dolphin donkey eagle egret falcon ferret finch fox gazelle gecko gibbon goose gopher
heron hippo husky ibis iguana jackal jaguar koala lemur leopard llama lobster lynx macaw
magpie marmot marten meerkat mink moose narwhal newt ocelot okapi orca osprey otter owl
panda panther parrot pelican penguin puffin quail rabbit raccoon raven robin salmon seal
shark sloth sparrow squid stoat swan tapir tiger toucan turtle viper walrus weasel whale
wolf wombat wren yak zebra
""".split()

SESSION_NAME_RE = re.compile(r"[a-z]+-[a-z]+-[a-z]+")
PLAN_ID_RE = re.compile(r"[a-z0-9]{5}")
PLAN_ID_ALPHABET = "abcdefghijklmnopqrstuvwxyz0123456789"
PROJECT_NAME_RE = re.compile(r"[a-z0-9][a-z0-9-]{0,62}")


def new_session_name() -> str:
    return "-".join(secrets.choice(words) for words in (ADJECTIVES, COLOURS, ANIMALS))


_PLAN_IDS = len(PLAN_ID_ALPHABET) ** 5


def new_plan_id() -> str:
    """Five characters of PLAN_ID_ALPHABET, each as likely as any other: one number below
    36**5 from the system's random source, written in base 36 (one read of the source,
    where a choice per character made about nine)."""
    number = secrets.randbelow(_PLAN_IDS)
    chars = []
    for _ in range(5):
        number, digit = divmod(number, len(PLAN_ID_ALPHABET))
        chars.append(PLAN_ID_ALPHABET[digit])
    return "".join(chars)


def is_session_name(value: object) -> bool:
    return isinstance(value, str) and len(value) <= 64 and SESSION_NAME_RE.fullmatch(value) is not None


def is_plan_id(value: object) -> bool:
    return isinstance(value, str) and PLAN_ID_RE.fullmatch(value) is not None


def is_project_name(value: object) -> bool:
    return isinstance(value, str) and PROJECT_NAME_RE.fullmatch(value) is not None
