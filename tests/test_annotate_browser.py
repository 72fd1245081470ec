"""The annotation page in real headless Chromium: log in, answer with hotkeys only, see the next image."""
from __future__ import annotations

import os
import shutil

import pytest

from tests.support.annotate import start_server
from tests.support.runfixture import make_run_dir

CHROMIUM = os.environ.get("FOCUSCRAWL_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                 "--disable-sync", "--no-first-run"]
XSS_ALT = '<script>window.pwned = 1</script><img src=x onerror="window.pwned = 2">'

pytestmark = pytest.mark.skipif(not shutil.which(CHROMIUM) and not os.path.exists(CHROMIUM),
                                reason="Debian chromium not installed (install.sh installs it)")


@pytest.fixture
def served(tmp_path):
    rows = [{"url": f"http://a.org/{i}.jpg", "score": 10 + i, "alt": f"a tabby cat, picture {i}"} for i in range(3)]
    rows[1]["alt"] = XSS_ALT
    run_dir = make_run_dir(tmp_path / "run", rows, image_size=(800, 600))
    db, server, thread = start_server(run_dir, tmp_path / "db.sqlite3", per_image=3)
    db.add_user("anna", "anna-password")
    yield db, f"http://127.0.0.1:{server.server_port}", tmp_path
    server.shutdown()
    thread.join(5)


@pytest.fixture(scope="module")
def browser():
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield browser
        browser.close()


@pytest.fixture
def page(browser):
    context = browser.new_context(viewport={"width": 800, "height": 1000})  # fresh cookies per test
    yield context.new_page()
    context.close()


def test_annotate_with_hotkeys_only(served, page):
    db, base, tmp_path = served
    page.goto(base + "/")
    assert page.url.endswith("/login")
    page.keyboard.type("anna")  # the name field has autofocus
    page.keyboard.press("Tab")
    page.keyboard.type("anna-password")
    page.keyboard.press("Enter")
    page.wait_for_url(base + "/")
    first_src = page.get_attribute("#task-image", "src")
    assert page.evaluate("document.getElementById('task-image').naturalWidth") == 800  # image loaded
    width = page.evaluate("document.getElementById('task-image').getBoundingClientRect().width")
    assert width <= 600
    assert page.inner_text("#alt-text") == "a tabby cat, picture 0"
    page.screenshot(path=str(tmp_path / "annotate.png"), full_page=True)

    page.keyboard.press("Enter")  # nothing chosen: not sent, both questions marked
    assert page.locator("fieldset.missing").count() == 2 and db.all_answers() == []
    page.keyboard.press("2")
    page.keyboard.press("ArrowLeft")
    page.keyboard.press("1")  # a change of mind: the last key wins
    page.keyboard.press("ArrowUp")
    with page.expect_navigation():
        page.keyboard.press("Enter")
    assert page.get_attribute("#task-image", "src") != first_src
    assert "Saved" in page.inner_text(".message")
    assert db.all_answers() == [(1, "anna", 0, 0)]

    # second image: its ALT is hostile markup, shown as text and never run
    assert page.inner_text("#alt-text") == XSS_ALT
    assert page.evaluate("window.pwned") is None
    page.keyboard.press("5")
    page.keyboard.press("ArrowRight")
    with page.expect_navigation():
        page.keyboard.press("Enter")
    assert db.all_answers() == [(1, "anna", 0, 0), (2, "anna", 4, 3)]
    assert page.inner_text("#mine") == "2"


def test_tablet_width_layout(served, page):
    db, base, tmp_path = served
    page.set_viewport_size({"width": 600, "height": 960})
    page.goto(base + "/login")
    page.fill("input[name=name]", "anna")
    page.fill("input[name=password]", "anna-password")
    page.click("button[type=submit]")
    page.wait_for_url(base + "/")
    # everything fits the width: no horizontal scrolling
    assert page.evaluate("document.documentElement.scrollWidth") <= 600
    page.click("text=Pet")  # touch works as well as keys
    page.click("text=fits the topic")
    with page.expect_navigation():
        page.click("#send")
    assert db.all_answers() == [(1, "anna", 1, 1)]
    page.goto(base + "/help")
    assert "ArrowUp" not in page.content() and "describes the image" in page.inner_text("main")
