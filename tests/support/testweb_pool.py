"""A small hand-made text pool for test-web tests (no shared data needed)."""
from __future__ import annotations

from focuscrawl.testweb.textpool import Photo, TextPool

CAT_CAPTIONS = [
    "A cat sleeping on a red sofa", "A grey kitten playing with a ball of wool", "Two cats sitting on a windowsill",
    "A black cat lying on top of a laptop", "A cat drinking water from a bathroom sink",
    "A tabby cat looking out of the window", "A white kitten hiding inside a cardboard box",
    "A cat stretching on the kitchen floor", "An orange cat sitting on a wooden fence",
    "A fluffy cat curled up on a blanket", "A cat chasing a toy mouse across the room",
    "A cat watching birds from the balcony",
]
DOG_CAPTIONS = [
    "A brown dog running through the park", "A puppy chewing on a stick", "Two dogs playing in the snow",
    "A dog catching a frisbee on the beach", "A black dog swimming in a lake", "A dog sleeping by the fireplace",
    "A small dog wearing a red collar", "A dog jumping over a fence",
]
OTHER_CAPTIONS = [
    "A red bus driving down a city street", "A plate of pasta with tomato sauce", "A man riding a bicycle",
    "A train waiting at the station platform", "A bowl of fresh fruit on a table", "A woman holding an umbrella",
    "Boats docked at a small harbour", "A pizza with mushrooms and olives", "People walking in a busy market",
    "A tall clock tower in the town square", "A skier going down a snowy slope", "A kitchen with white cabinets",
    "A surfer riding a large wave", "An airplane taking off from the runway", "A bench in a green park",
    "A street sign at a crossing", "Children playing football on a field", "A laptop and a cup of coffee on a desk",
    "A giraffe eating leaves from a tree", "A bathroom with a large mirror",
]
WORDS = ("government market river science history music school energy travel garden weather city report "
         "council budget museum library student season festival harbour railway mountain").split()


def _doc(k: int) -> list[str]:
    paras = [f"Report number {k} about the {WORDS[k % len(WORDS)]}"]
    for j in range(6):
        words = [WORDS[(k * 7 + j * 3 + i) % len(WORDS)] for i in range(14)]
        paras.append("The " + " ".join(words) + " was discussed at length by the local committee.")
    return paras


def small_pool() -> TextPool:
    photos = [Photo(f"cat:{i}", (c, c.replace("A ", "One ", 1), "An animal indoors"))
              for i, c in enumerate(CAT_CAPTIONS)]
    photos += [Photo(f"dog:{i}", (c, "An animal outside")) for i, c in enumerate(DOG_CAPTIONS)]
    photos += [Photo(f"other:{i}", (c, c + " in the afternoon")) for i, c in enumerate(OTHER_CAPTIONS)]
    leads = {"Cat": "The cat is a small domesticated carnivorous mammal. Cats are kept as pets all over the world. "
                    "A kitten is a juvenile cat.",
             "Dog": "The dog is a domesticated descendant of the wolf. Dogs are kept as pets.",
             "Water": "Water is an inorganic compound. It is the main part of rivers, lakes and oceans.",
             "Football": "Football is a family of team sports that involve kicking a ball to score a goal."}
    return TextPool(photos, leads, [_doc(k) for k in range(12)])


TENNIS_CAPTIONS = [
    "A man swinging a tennis racket at a ball", "A woman playing tennis on a clay court",
    "A tennis player serving the ball", "Two men playing doubles tennis on a court",
    "A girl holding a tennis racket on the court", "A player hitting a tennis ball with a backhand",
    "A man in white playing tennis on a grass court", "A tennis player reaching for the ball",
]
BASEBALL_CAPTIONS = [
    "A man swinging a baseball bat at a ball", "A baseball player throwing the ball on the field",
    "A batter waiting for the pitch at home plate", "A baseball player running to first base",
    "A catcher holding out his glove behind the plate", "A pitcher throwing a ball from the mound",
]


def sports_pool() -> TextPool:
    """Tennis and its look-alike neighbour baseball (players, balls, swings): most words shared."""
    base = small_pool()
    photos = [Photo(f"tennis:{i}", (c, c.replace("A ", "One ", 1), "A player on a court"))
              for i, c in enumerate(TENNIS_CAPTIONS)]
    photos += [Photo(f"baseball:{i}", (c, "A player on a field")) for i, c in enumerate(BASEBALL_CAPTIONS)]
    leads = dict(base.leads, Tennis="Tennis is a racket sport played by two players or two teams of two. "
                                    "Each player hits a ball with a racket over a net.",
                 Baseball="Baseball is a bat-and-ball sport played between two teams of nine players.")
    return TextPool(base.photos + photos, leads, base.documents)
