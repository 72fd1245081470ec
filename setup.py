"""Package layout for pip and for scrapyd-deploy's egg build.

The bundled demo topic bundle, background corpus and text chooser live in the
top-level ``models/`` folder of the repository and are installed as the package
``focuscrawl.models`` so that ``importlib.resources`` finds them in a wheel, an
editable install and a scrapyd egg.
"""
import atexit
import shutil
import sys
import tempfile

from setuptools import find_packages, setup


def _scratch_options() -> dict:
    """``scrapyd-deploy`` runs ``setup.py clean -a`` and ``setup.py bdist_egg -d TMP`` in the
    checkout: its ``build/`` and ``*.egg-info`` go to a temporary folder removed at exit, so
    the checkout is left as it was. pip's wheel and editable builds are not affected."""
    if "bdist_egg" not in sys.argv:
        return {}
    scratch = tempfile.mkdtemp(prefix="focuscrawl-egg-build-")
    atexit.register(shutil.rmtree, scratch, ignore_errors=True)
    return {"build": {"build_base": f"{scratch}/build"}, "egg_info": {"egg_base": scratch}}


setup(
    options=_scratch_options(),
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
