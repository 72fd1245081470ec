"""Package layout for pip and for scrapyd-deploy's egg build.

The bundled demo topic bundle, background corpus and text chooser live in the
top-level ``models/`` folder of the repository and are installed as the package
``focuscrawl.models`` so that ``importlib.resources`` finds them in a wheel, an
editable install and a scrapyd egg.
"""
from setuptools import find_packages, setup

setup(
    # data-only folders are listed as packages too (setuptools warns about importable
    # folders missing from ``packages``); their files are listed statically below
    packages=find_packages(include=["focuscrawl", "focuscrawl.*"]) + [
        "focuscrawl.models", "focuscrawl.models.cats",
        "focuscrawl.annotate.static", "focuscrawl.annotate.templates", "focuscrawl.eval.templates"],
    package_dir={"focuscrawl.models": "models", "focuscrawl.models.cats": "models/cats"},
    package_data={"focuscrawl.models": ["*.txt", "*.txt.gz", "*.md", "*.json"],
                  "focuscrawl.models.cats": ["*.json", "*.txt", "*.npy", "*.arpa.gz", "*.binary"],
                  "focuscrawl.annotate.static": ["*.css", "*.js"],
                  "focuscrawl.annotate.templates": ["*.html"],
                  "focuscrawl.eval.templates": ["*.html"],
                  "focuscrawl.testweb": ["*.json.gz"]},
    zip_safe=False,
)
