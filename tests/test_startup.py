"""What a crawl process imports before its first request: a second or more of CPU for
every crawl, `scrapy shell` and CLI command, so heavy imports wait until they are used."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _crawler_imports(modules: list[str], **settings) -> dict[str, bool]:
    """Which of ``modules`` a crawler of the project's settings (plus ``settings``) has
    imported once its extensions are built, in a fresh interpreter."""
    code = (
        "import json, sys\n"
        "from scrapy.utils.project import get_project_settings\n"
        "from scrapy.utils.reactor import install_reactor\n"
        "from scrapy.utils.test import get_crawler\n"
        "install_reactor('twisted.internet.asyncioreactor.AsyncioSelectorReactor')\n"
        "settings = get_project_settings().copy_to_dict()\n"
        f"settings.update({settings!r})\n"
        "get_crawler(settings_dict=settings)\n"
        f"print(json.dumps({{m: m in sys.modules for m in {modules!r}}}))\n")
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return json.loads(proc.stdout.splitlines()[-1])


def test_scrapys_remote_control_is_not_loaded_while_it_is_off():
    assert _crawler_imports(["aiohttp"]) == {"aiohttp": False}
    assert _crawler_imports(["aiohttp"], REMOTE_CONTROL_ENABLED=True) == {"aiohttp": True}
