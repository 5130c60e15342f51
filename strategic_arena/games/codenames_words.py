"""Codenames' words offline: NLTK's corpus where it is installed, the package's own list otherwise.

TextArena's Codenames (0.7.4) draws its 25 board words from NLTK's ``words`` corpus (Ogden's
Basic English list, ``en-basic``; ``en`` when hardcore), keeping the words NLTK's perceptron
tagger tags as singular nouns (``NN``) shorter than 8 letters. It downloads both the corpus and
the tagger (``averaged_perceptron_tagger_eng``) when it is imported; neither ships with the
``nltk`` package on PyPI, so offline (CI, a machine without internet) the game cannot start.

The curated entry (``mindgames_codenames-v0``) keeps TextArena's behaviour wherever NLTK's
corpus *and* tagger are installed (``python -m nltk.downloader words
averaged_perceptron_tagger_eng``): TextArena's own filter over the same corpus, so the same
boards for the same seeds. Otherwise it draws from :data:`PACKAGED_WORDS`, a list written for
this package (434 common concrete English nouns of at most 7 lowercase letters, under the
package's own licence): a seed then deals other words than TextArena would online (the 9 / 8
/ 7 / 1 assignment, the rules and the prompts are unchanged). Which source dealt a game is
not a setting: it is whatever the machine has, and :func:`codenames_word_source` names it.
"""

from __future__ import annotations

from typing import Literal

WordSource = Literal["nltk", "package"]

_WORDS = """
    acid actor air alarm album alien anchor angel ankle apple apron arch arm army arrow atlas
    attic baby badge bag ball balloon band bank bar barn basket bat bath beach beam bean bear
    beard bed bee beef bell belt bench berry bike bird blade blanket boat bone book boot bottle
    bowl box brain branch bread brick bridge broom brush bucket bug bulb bus bush butter button
    cabin cable cage cake camel camera camp canal candle candy cane cannon canoe cap car card
    carpet cart castle cat cave chain chair chalk cheese cherry chest chicken chin church
    circle city clock cloud clown coal coat coin comb comet cone cook copper coral corn cotton
    couch cow crab crane crown cup curtain dart deck deer desk dial diamond dice doctor dog
    doll dolphin door dragon drain dress drill drum duck dust eagle ear earth egg engine eye
    fan farm feather fence field file finger fire fish flag flame flute fly foam fog foot
    forest fork fort fossil fox frame frog fruit game garden gate gem ghost giant gift glass
    glove goat gold grape grass guitar hammer hand harbor hat hawk heart helmet hill hive honey
    hook horn horse hose hotel house ice igloo ink iron island jacket jam jar jelly jet jewel
    judge juice kettle key king kite knee knife knight knot ladder lake lamp lane laser leaf
    lemon lens letter lid light lily lime lion lip lock log magnet mail map marble market mask
    match meat medal milk mill mine mirror mole money monkey moon moose motor mouse mouth mud
    mug nail needle nest net night nose nurse nut oak oar ocean office oil olive onion orange
    organ oven owl paint palace palm pan paper park parrot party pasta pearl pen pencil pepper
    piano pig pillow pilot pin pipe pirate pizza plane plant plate plum pocket poet pole pond
    pony pool port pot potato pump queen rabbit radio rail rain ring river road robe robot rock
    rocket roof root rope rose ruler sack sail salt sand saw scale school screw sea seal seed
    shark sheep shelf shell ship shirt shoe shop silk silver singer skirt sky sled slide snail
    snake snow soap sock sofa soldier soup spear spider spine spoon spring squid stage stamp
    star steam stick stone storm stove straw string sugar suit sun swan sword table tail tank
    tape tea teeth tent thread throne thumb ticket tiger tire toast toe tomato tongue tool
    tooth torch towel tower town toy track train tree truck trunk tube tulip turkey turtle
    wagon wall wand watch water wave whale wheel whip window wing wire wolf wood worm yard
"""

#: The package's own Codenames words: common concrete nouns, lowercase, 3-7 letters, sorted.
PACKAGED_WORDS: tuple[str, ...] = tuple(_WORDS.split())


def codenames_word_source() -> WordSource:
    """``"nltk"`` where NLTK's ``words`` corpus and its English tagger are installed."""
    try:
        import nltk  # type: ignore[import-untyped]

        nltk.data.find("corpora/words")
        nltk.data.find("taggers/averaged_perceptron_tagger_eng")
    except (ImportError, LookupError):
        return "package"
    return "nltk"
