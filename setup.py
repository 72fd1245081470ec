"""Package layout for pip and for scrapyd-deploy's egg build.

The bundled demo model lives in the top-level ``models/`` folder of the repository
and is installed as the package ``focuscrawl.models`` so that
``importlib.resources`` finds it in a wheel, an editable install and a scrapyd egg.
"""
from setuptools import find_packages, setup

setup(
    # data-only folders are listed as packages too (setuptools warns about importable
    # folders missing from ``packages``); their files are listed statically below
    packages=find_packages(include=["focuscrawl", "focuscrawl.*"]) + [
        "focuscrawl.models", "focuscrawl.annotate.static", "focuscrawl.annotate.templates"],
    package_dir={"focuscrawl.models": "models"},
    package_data={"focuscrawl.models": ["*.arpa", "*.arpa.gz", "*.bin", "*.txt", "*.md", "*.json"],
                  "focuscrawl.annotate.static": ["*.css", "*.js"],
                  "focuscrawl.annotate.templates": ["*.html"],
                  "focuscrawl.testweb": ["*.json.gz"]},
    zip_safe=False,
)
