"""Agreement and result tables of an annotation (SPEC §7, thesis Tables 5.3-5.5, A.1, A.2).

Pure functions over answers ``(item, annotator, image_label, text_label)`` with labels
as indices: image 0 topic, 1 pet, 2 animal, 3 living being, 4 other; text 0 describes
the image, 1 fits the topic, 2 irrelevant, 3 misleading.
"""
from __future__ import annotations

import itertools
import math
import warnings
from collections import Counter, defaultdict
from dataclasses import dataclass
from typing import Iterable, Sequence

#: Merged categories of thesis Table 5.4 (a-d): old label index -> merged index.
IMAGE_REDUCED_1 = (0, 1, 2, 2, 3)  # topic, pet, (animal + living being), other
IMAGE_REDUCED_2 = (0, 1, 2, 2, 2)  # topic, pet, rest
TEXT_REDUCED_1 = (0, 0, 1, 2)  # (describes + fits), irrelevant, misleading
TEXT_REDUCED_2 = (0, 0, 1, 1)  # (describes + fits), rest

Answer = tuple  # (item, annotator, image_label, text_label)


@dataclass
class Agreement:
    label: int | None  # the majority label, None = no majority
    count: int  # how many annotators gave it
    voters: int

    @property
    def majority(self) -> bool:
        return self.label is not None

    @property
    def unanimous(self) -> bool:
        return self.label is not None and self.count == self.voters


def agreement(labels: Sequence[int]) -> Agreement:
    """Majority = a label given by more than half of the annotators (≥ 2 of 3); unanimous = all of them."""
    if not labels:
        return Agreement(None, 0, 0)
    label, count = Counter(labels).most_common(1)[0]
    if 2 * count <= len(labels):
        return Agreement(None, count, len(labels))
    return Agreement(label, count, len(labels))


def group_by_item(answers: Iterable[Answer], per_image: int) -> dict:
    """{item: [(annotator, image, text), ...]} for items with at least ``per_image`` answers."""
    items = defaultdict(list)
    for item, annotator, image, text in answers:
        items[item].append((annotator, image, text))
    return {item: rows for item, rows in items.items() if len(rows) >= per_image}


def category_table(labels_per_item: Iterable[Sequence[int]], n_labels: int) -> dict:
    """Thesis Table A.1/A.2: per label the unanimous count, the majority-but-not-unanimous count
    and their sum; plus items without majority and the total."""
    unanimous = [0] * n_labels
    majority_only = [0] * n_labels
    no_majority = total = 0
    for labels in labels_per_item:
        total += 1
        agree = agreement(labels)
        if not agree.majority:
            no_majority += 1
        elif agree.unanimous:
            unanimous[agree.label] += 1
        else:
            majority_only[agree.label] += 1
    return {"unanimous": unanimous, "majority_only": majority_only,
            "majority": [u + m for u, m in zip(unanimous, majority_only)],
            "no_majority": no_majority, "total": total}


def corpus_candidates(items: dict) -> dict:
    """Thesis Table 5.5: topic images whose text describes the image / fits the topic,
    unanimous (both questions unanimous) and by majority (both questions by majority)."""
    result = {"describes": {"unanimous": 0, "majority": 0}, "fits": {"unanimous": 0, "majority": 0}}
    for rows in items.values():
        image = agreement([r[1] for r in rows])
        text = agreement([r[2] for r in rows])
        if image.label != 0 or text.label not in (0, 1):
            continue
        key = "describes" if text.label == 0 else "fits"
        result[key]["majority"] += 1
        if image.unanimous and text.unanimous:
            result[key]["unanimous"] += 1
    return result


def cohen_kappa(a: Sequence[int], b: Sequence[int]) -> float:
    """Cohen's kappa of two annotators' labels on the same items (scikit-learn); NaN if undefined
    (both used one and the same label throughout: chance agreement is 1)."""
    from sklearn.metrics import cohen_kappa_score

    if not a:
        return math.nan
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # undefined kappa: NaN, reported as such
        return float(cohen_kappa_score(list(a), list(b)))


def pairwise_kappa(answers: Iterable[Answer], which: int, merge: Sequence[int] | None = None) -> dict:
    """Kappa for every annotator pair that shares at least one image, and their mean (thesis Table 5.4).

    ``which`` is 2 for the image question, 3 for the text question; ``merge`` maps labels to
    merged categories. Pairs whose kappa is undefined are listed but left out of the mean.
    """
    by_annotator: dict[str, dict] = defaultdict(dict)
    for row in answers:
        label = row[which]
        by_annotator[row[1]][row[0]] = merge[label] if merge else label
    pairs = {}
    for x, y in itertools.combinations(sorted(by_annotator), 2):
        shared = sorted(set(by_annotator[x]) & set(by_annotator[y]))
        if shared:
            pairs[(x, y)] = cohen_kappa([by_annotator[x][i] for i in shared],
                                        [by_annotator[y][i] for i in shared])
    defined = [k for k in pairs.values() if not math.isnan(k)]
    return {"annotators": len(by_annotator), "pairs": len(pairs), "undefined_pairs": len(pairs) - len(defined),
            "mean": sum(defined) / len(defined) if defined else math.nan, "by_pair": pairs}


def kappa_table(answers: Sequence[Answer]) -> dict:
    """All six rows of thesis Table 5.4."""
    return {
        "image": pairwise_kappa(answers, 2),
        "image_reduced_1": pairwise_kappa(answers, 2, IMAGE_REDUCED_1),
        "image_reduced_2": pairwise_kappa(answers, 2, IMAGE_REDUCED_2),
        "text": pairwise_kappa(answers, 3),
        "text_reduced_1": pairwise_kappa(answers, 3, TEXT_REDUCED_1),
        "text_reduced_2": pairwise_kappa(answers, 3, TEXT_REDUCED_2),
    }


def label_counts(answers: Iterable[Answer], n_image: int = 5, n_text: int = 4) -> dict:
    """How often each category was chosen over all answers."""
    image, text = [0] * n_image, [0] * n_text
    for row in answers:
        image[row[2]] += 1
        text[row[3]] += 1
    return {"image": image, "text": text}
