"""Export of a ranked corpus (``focuscrawl rank``): ``formats`` writes TSV, JSON lines, Parquet
and WebDataset with one row per image; ``images`` resizes and re-encodes the images in
worker processes; ``cli`` holds ``rank``'s export options. docs/CORPUS.md describes the fields."""
