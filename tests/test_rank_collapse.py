"""``focuscrawl rank --collapse-near-duplicates`` on a small run directory with real image files."""
import hashlib
import json

from PIL import Image, ImageDraw

from focuscrawl.cli import main
from tests.runfixture import make_run_dir

LONG = ("A grey tabby cat sleeps on the warm window sill while the children play in the garden "
        "and the old dog watches the birds from the porch")


def picture(seed: int, size=(320, 240)) -> Image.Image:
    img = Image.new("RGB", size, (250, 250, 250))
    d = ImageDraw.Draw(img)
    for i in range(6):
        x, y = (seed * 37 + i * 53) % size[0], (seed * 91 + i * 29) % size[1]
        d.ellipse([x, y, x + 60 + 7 * i, y + 40 + 5 * seed % 30], fill=((seed * 60 + i * 40) % 256, 80, 160))
    return img


def test_rank_collapses_same_picture_and_same_context(tmp_path, capsys):
    rows = [
        {"url": "http://a.org/a.jpg", "score": 10.0, "context": "first caption about a cat"},
        {"url": "http://b.org/b.jpg", "score": 5.0, "context": "another caption entirely"},
        {"url": "http://a.org/c.jpg", "score": 20.0, "context": LONG},
        {"url": "http://a.org/d.jpg", "score": 15.0, "context": LONG + "!"},
        {"url": "http://a.org/e.jpg", "score": 30.0, "context": "a kitten with a ball of wool"},
    ]
    run = make_run_dir(tmp_path / "run", rows)
    pictures = [picture(1), picture(1).resize((200, 150)), picture(2), picture(3), picture(4)]
    for row, img in zip(rows, pictures):
        img.save(run / "images" / f"{hashlib.sha1(row['url'].encode()).hexdigest()}.png")

    out = tmp_path / "ranked.jsonl"
    assert main(["rank", str(run), "--format", "jsonl", "-o", str(out), "--collapse-near-duplicates"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["filtered"] == {"near_duplicates": 2} and summary["ranked"] == 3
    ranked = [json.loads(line)["image_url"] for line in out.read_text().splitlines()]
    assert ranked == ["http://b.org/b.jpg", "http://a.org/d.jpg", "http://a.org/e.jpg"]

    assert main(["rank", str(run), "--format", "jsonl", "-o", str(out)]) == 0
    assert json.loads(capsys.readouterr().out)["ranked"] == 5

    assert main(["rank", str(run), "-o", str(out), "--collapse-near-duplicates", "--image-distance", "99"]) == 2
    assert "--image-distance" in capsys.readouterr().err
