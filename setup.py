"""Package layout for pip and for scrapyd-deploy's egg build.

The bundled demo model lives in the top-level ``models/`` folder of the repository
and is installed as the package ``focuscrawl.models`` so that
``importlib.resources`` finds it in a wheel, an editable install and a scrapyd egg.
"""
from setuptools import find_packages, setup

setup(
    packages=find_packages(include=["focuscrawl", "focuscrawl.*"]) + ["focuscrawl.models"],
    package_dir={"focuscrawl.models": "models"},
    package_data={"focuscrawl.models": ["*.arpa", "*.arpa.gz", "*.bin", "*.txt", "*.md", "*.txt.gz",
                                        "cats/*"],
                  "focuscrawl": ["**/*.html", "**/*.css", "**/*.js", "**/*.json", "**/*.txt", "**/*.json.gz"]},
    include_package_data=True,
    zip_safe=False,
)
