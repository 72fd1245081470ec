"""Image-context extractors: the text that belongs to an ``<img>`` (SPEC §6 step 4, §9)."""
