"""img2dataset-grade exports (issue #30, #27 point 4), each loaded with its consumer's own
library: webdataset, pyarrow, pandas, Hugging Face datasets, Pillow."""
from __future__ import annotations

import hashlib
import io
import json
from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq
import pytest
import webdataset as wds
from PIL import Image

from focuscrawl.cli import main
from focuscrawl.export.images import ImageOptions, encode_image, target_size
from tests.support.imagesite import image_bytes, png_bomb, truncated_jpeg
from tests.support.runfixture import make_run_dir


def _rgba_png(size=(50, 40)) -> bytes:
    """A half-transparent PNG: its transparent half must come out white."""
    img = Image.new("RGBA", size, (200, 30, 30, 255))
    img.paste((0, 0, 0, 0), (0, 0, size[0] // 2, size[1]))
    buf = io.BytesIO()
    img.save(buf, "PNG")
    return buf.getvalue()


def _rotated_jpeg(size=(64, 48), orientation=6) -> bytes:
    """A JPEG stored ``size`` wide whose EXIF says: turn it by 90 degrees to show it."""
    img = Image.new("RGB", size, (20, 120, 200))
    exif = Image.Exif()
    exif[0x0112] = orientation
    buf = io.BytesIO()
    img.save(buf, "JPEG", exif=exif)
    return buf.getvalue()


#: the formats a crawl keeps, as downloaded: mixed jpg/png/gif keys before re-encoding (issue #27 point 4)
MIXED = [
    {"url": "http://a.org/1.jpg", "score": 3, "alt": "a tabby cat on a sofa", "format": "JPEG", "size": (64, 48)},
    {"url": "http://a.org/2.png", "score": 4, "alt": "a kitten in a basket", "format": "PNG", "size": (30, 80)},
    {"url": "http://a.org/3.gif", "score": 5, "alt": "a cat chasing a ball", "format": "GIF", "size": (40, 40)},
    {"url": "http://a.org/4.png", "score": 6, "alt": "a cat sleeping", "image": _rgba_png(), "size": (50, 40)},
    {"url": "http://a.org/5.jpg", "score": 7, "alt": "a cat turned on its side", "format": "JPEG",
     "image": _rotated_jpeg(), "size": (64, 48)},
]


@pytest.fixture
def mixed_run(tmp_path):
    return make_run_dir(tmp_path / "run", MIXED)


def _rank(run_dir, out, *options, capsys=None) -> dict:
    assert main(["rank", "--json", str(run_dir), "--jobs", "1", *options, "-o", str(out)]) == 0
    return json.loads(capsys.readouterr().out) if capsys is not None else {}


def _shards(folder: Path) -> list[str]:
    return sorted(str(p) for p in folder.glob("*.tar"))


def test_webdataset_has_one_image_key_and_loads_with_to_tuple(mixed_run, tmp_path, capsys):
    summary = _rank(mixed_run, tmp_path / "wds", "--format", "webdataset", capsys=capsys)
    assert summary["written"] == 5 and summary["status"] == {"success": 5}
    assert summary["images"] == {"image_size": None, "resize_mode": "no", "encode_format": "jpg",
                                 "encode_quality": 95}
    shards = _shards(tmp_path / "wds")
    pairs = list(wds.WebDataset(shards, shardshuffle=False).to_tuple("jpg", "txt"))
    assert [txt.decode() for _, txt in pairs] == [r["alt"] for r in MIXED]
    samples = list(wds.WebDataset(shards, shardshuffle=False).decode("pil").to_tuple("jpg", "json", "__key__"))
    sizes = []
    for image, meta, key in samples:
        assert image.mode == "RGB"
        assert meta["key"] == key and meta["status"] == "success" and meta["caption"] == meta["alt"]
        assert (meta["width"], meta["height"]) == image.size
        sizes.append((meta["original_width"], meta["original_height"]))
    # the turned JPEG: its original size is the picture as shown (48 x 64), and so is the export
    assert sizes == [(64, 48), (30, 80), (40, 40), (50, 40), (48, 64)]
    assert samples[4][0].size == (48, 64)
    # transparency composited on white (img2dataset's convention): the transparent left half is white
    assert samples[3][0].getpixel((2, 20)) == (255, 255, 255)
    raw = next(iter(wds.WebDataset(shards, shardshuffle=False)))
    assert {k for k in raw if not k.startswith("__")} == {"jpg", "txt", "json"}
    assert json.loads(raw["json"])["sha256"] == hashlib.sha256(raw["jpg"]).hexdigest()
    assert Image.open(io.BytesIO(raw["jpg"])).format == "JPEG"


def test_sample_json_is_the_parquet_row(mixed_run, tmp_path, capsys):
    """A sample's .json has the same fields (and values) as its Parquet row with --embed-images,
    whose image column holds the same bytes."""
    _rank(mixed_run, tmp_path / "wds", "--format", "webdataset", "--image-size", "32")
    _rank(mixed_run, tmp_path / "c.parquet", "--format", "parquet", "--embed-images", "--image-size", "32")
    rows = pq.read_table(tmp_path / "c.parquet").to_pylist()
    samples = list(wds.WebDataset(_shards(tmp_path / "wds"), shardshuffle=False))
    assert len(rows) == len(samples) == 5
    for row, sample in zip(rows, samples):
        image = row.pop("image")
        assert json.loads(sample["json"]) == row
        assert image == {"bytes": sample["jpg"], "path": f"{row['key']}.jpg"}
    assert list(rows[0])[:6] == ["rank", "p_on_topic", "final_score", "url", "caption", "key"]
    assert {"original_width", "original_height", "width", "height", "sha256", "status"} <= set(rows[0])


@pytest.mark.parametrize("mode, landscape, portrait", [
    ("no", (64, 48), (30, 80)),
    ("keep_ratio", (43, 32), (32, 85)),  # the smaller side becomes 32
    ("center_crop", (32, 32), (32, 32)),
    ("border", (32, 32), (32, 32)),  # the larger side becomes 32, white borders
])
def test_resize_modes_give_the_asked_size(mixed_run, tmp_path, mode, landscape, portrait):
    _rank(mixed_run, tmp_path / "wds", "--format", "webdataset", "--image-size", "32", "--resize-mode", mode)
    images = [img for img, in wds.WebDataset(_shards(tmp_path / "wds"), shardshuffle=False)
              .decode("pil").to_tuple("jpg")]
    assert images[0].size == landscape and images[1].size == portrait
    assert all(img.size == (32, 32) for img in images) == (mode in ("center_crop", "border"))
    if mode == "border":  # 64 x 48 -> 32 x 24 centred: rows 0-3 are the white border (JPEG: nearly)
        assert min(images[0].getpixel((16, 0))) >= 245 and max(images[0].getpixel((16, 16))) < 245
    options = ImageOptions(10**8, 32, mode)
    assert [target_size(64, 48, options), target_size(30, 80, options)] == [landscape, portrait]


@pytest.mark.parametrize("fmt, quality, pillow", [("webp", "80", "WEBP"), ("png", "9", "PNG"), ("jpg", "60", "JPEG")])
def test_encode_format_is_the_shards_image_key(mixed_run, tmp_path, fmt, quality, pillow):
    _rank(mixed_run, tmp_path / "wds", "--format", "webdataset", "--encode-format", fmt, "--encode-quality", quality)
    shards = _shards(tmp_path / "wds")
    images = [img for img, _ in wds.WebDataset(shards, shardshuffle=False).to_tuple(fmt, "txt")]
    assert len(images) == 5 and {Image.open(io.BytesIO(b)).format for b in images} == {pillow}
    stats = json.loads(Path(shards[0].removesuffix(".tar") + "_stats.json").read_text())
    assert (stats["encode_format"], stats["encode_quality"]) == (fmt, int(quality))


def test_parquet_embedded_images_load_with_pyarrow_pandas_and_datasets(mixed_run, tmp_path, monkeypatch):
    out = tmp_path / "corpus.parquet"
    _rank(mixed_run, out, "--format", "parquet", "--embed-images", "--image-size", "24", "--resize-mode",
          "center_crop", "--encode-format", "webp")
    table = pq.read_table(out)
    for cell in table.column("image").to_pylist():
        assert Image.open(io.BytesIO(cell["bytes"])).size == (24, 24) and cell["path"].endswith(".webp")
    frame = pd.read_parquet(out)
    assert list(frame["url"]) == [r["url"] for r in MIXED]
    assert Image.open(io.BytesIO(frame["image"][0]["bytes"])).format == "WEBP"

    import datasets

    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    ds = datasets.load_dataset("parquet", data_files=str(out), split="train", cache_dir=str(tmp_path / "hf"))
    assert isinstance(ds.features["image"], datasets.Image)
    assert ds.num_rows == 5 and ds[0]["image"].size == (24, 24) and ds[0]["caption"] == MIXED[0]["alt"]


def test_parquet_without_embed_points_at_the_downloaded_files(mixed_run, tmp_path):
    out = tmp_path / "c.parquet"
    _rank(mixed_run, out, "--format", "parquet")
    rows = pq.read_table(out).to_pylist()
    assert "image" not in rows[0] and rows[0]["image_path"].endswith(".jpg")
    assert all(r["sha256"] is None and r["status"] == "success" for r in rows)  # no bytes exported, none hashed
    assert [(r["width"], r["height"]) for r in rows] == [(r["original_width"], r["original_height"]) for r in rows]


def test_damaged_images_are_counted_not_exported(tmp_path, capsys):
    rows = [{"url": "http://a.org/ok.jpg", "score": 3, "alt": "a cat", "format": "JPEG"},
            {"url": "http://a.org/bomb.png", "score": 4, "alt": "a bomb", "image": png_bomb()},
            {"url": "http://a.org/cut.jpg", "score": 5, "alt": "cut short", "image": truncated_jpeg(), "format": "JPEG"},
            {"url": "http://a.org/page.jpg", "score": 6, "alt": "an error page", "image": b"<html>404</html>"},
            {"url": "http://a.org/none.jpg", "score": 7, "alt": "never downloaded", "image": False},
            {"url": "http://a.org/ok2.gif", "score": 8, "alt": "another cat", "format": "GIF"}]
    run_dir = make_run_dir(tmp_path / "run", rows)
    summary = _rank(run_dir, tmp_path / "wds", "--format", "webdataset", capsys=capsys)
    assert summary["written"] == 2
    assert summary["status"] == {"success": 2, "failed_to_resize": 3, "failed_to_download": 1}
    samples = list(wds.WebDataset(_shards(tmp_path / "wds"), shardshuffle=False).to_tuple("jpg", "json"))
    assert [json.loads(meta)["url"] for _, meta in samples] == ["http://a.org/ok.jpg", "http://a.org/ok2.gif"]
    assert [json.loads(meta)["key"] for _, meta in samples] == ["000000001", "000000006"]  # key = rank
    stats = json.loads((tmp_path / "wds" / "corpus-000000_stats.json").read_text())
    assert (stats["count"], stats["successes"], stats["failed_to_resize"], stats["failed_to_download"]) == (6, 2, 3, 1)
    reasons = " ".join(stats["status_dict"])
    assert "decompression_bomb" in reasons and "truncated" in reasons and "not_an_image" in reasons
    assert "no downloaded file" in reasons
    # Parquet keeps every ranked row: the failed ones say why and have no image
    _rank(run_dir, tmp_path / "c.parquet", "--format", "parquet", "--embed-images")
    table = pq.read_table(tmp_path / "c.parquet").to_pylist()
    assert [r["status"] for r in table] == ["success", "failed_to_resize", "failed_to_resize", "failed_to_resize",
                                            "failed_to_download", "success"]
    assert table[1]["image"] is None and table[1]["error_message"].startswith("decompression_bomb")
    assert table[1]["width"] is None and table[0]["image"]["bytes"][:2] == b"\xff\xd8"


def test_shards_of_n_samples_each_with_its_stats(mixed_run, tmp_path):
    _rank(mixed_run, tmp_path / "c.tar", "--format", "webdataset", "--shard-size", "2")
    names = sorted(p.name for p in tmp_path.iterdir() if p.is_file() and p.name != "README.md")  # the card
    assert (tmp_path / "README.md").read_text().startswith("---\n")
    assert names == ["c-000000.tar", "c-000000_stats.json", "c-000001.tar", "c-000001_stats.json",
                     "c-000002.tar", "c-000002_stats.json"]  # no temp file left
    counts = [json.loads((tmp_path / f"c-00000{i}_stats.json").read_text())["successes"] for i in range(3)]
    assert counts == [2, 2, 1]
    keys = [k for k, in wds.WebDataset(_shards(tmp_path), shardshuffle=False).to_tuple("__key__")]
    assert keys == [f"{i:09d}" for i in range(1, 6)]


def test_a_failed_write_is_one_line_and_leaves_no_partial_file(mixed_run, tmp_path, capsys):
    """The second shard cannot be put in place (a folder has its name): shard 0 is whole,
    shard 1's temp file is gone, one error line."""
    (tmp_path / "c-000001.tar").mkdir()
    assert main(["rank", "--json", str(mixed_run), "--format", "webdataset", "--shard-size", "2", "--jobs", "1",
                 "-o", str(tmp_path / "c.tar")]) == 2
    err = [line for line in capsys.readouterr().err.splitlines() if "error" in line]
    assert len(err) == 1 and "cannot write the export" in err[0] and "c-000001.tar" in err[0]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["c-000000.tar", "c-000000_stats.json", "c-000001.tar",
                                                          "run"]
    assert len(list(wds.WebDataset([str(tmp_path / "c-000000.tar")], shardshuffle=False))) == 2


def test_worker_processes_give_the_same_bytes(mixed_run, tmp_path):
    """--jobs 2 (two workers, images out of order) writes exactly what --jobs 1 writes."""
    for jobs in ("1", "2"):
        assert main(["rank", "--json", str(mixed_run), "--format", "parquet", "--embed-images", "--image-size", "20",
                     "--jobs", jobs, "-o", str(tmp_path / f"j{jobs}.parquet")]) == 0
    one, two = (pq.read_table(tmp_path / f"j{j}.parquet").to_pylist() for j in "12")
    assert one == two and len({r["sha256"] for r in one}) == 5


@pytest.mark.parametrize("options, message", [
    (["--format", "tsv", "--image-size", "64"], "--image-size: only an export with image bytes has them"),
    (["--format", "parquet", "--encode-format", "png"], "--encode-format: only an export with image bytes"),
    (["--format", "jsonl", "--embed-images"], "--embed-images is for --format parquet"),
    (["--format", "webdataset", "--resize-mode", "keep_ratio"], "--resize-mode keep_ratio needs --image-size N"),
    (["--format", "webdataset", "--encode-format", "png", "--encode-quality", "50"],
     "--encode-quality for png must be within [0, 9]"),
    (["--format", "webdataset", "--image-size", "0"], "--image-size must be at least 1"),
])
def test_option_errors_are_one_line_and_write_nothing(mixed_run, tmp_path, capsys, options, message):
    out = tmp_path / "out"
    assert main(["rank", "--json", str(mixed_run), *options, "-o", str(out)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and message in err[0] and "Traceback" not in err[0]
    assert not out.exists()


def test_webdataset_into_an_existing_file_is_one_line(mixed_run, tmp_path, capsys):
    (tmp_path / "out").write_text("a file")
    assert main(["rank", "--json", str(mixed_run), "--format", "webdataset", "-o", str(tmp_path / "out")]) == 2
    assert "is a file: webdataset writes shards into a folder" in capsys.readouterr().err


def test_encode_image_refuses_a_bomb_from_its_header():
    from focuscrawl.images.inspect import DECOMPRESSION_BOMB, ImageRejected

    with pytest.raises(ImageRejected) as exc:
        encode_image(png_bomb(), ImageOptions(max_pixels=10**6))
    assert exc.value.reason == DECOMPRESSION_BOMB
    data, size, original = encode_image(image_bytes("PNG", (600, 400)), ImageOptions(10**6, 60, "keep_ratio"))
    assert (size, original) == ((90, 60), (600, 400)) and Image.open(io.BytesIO(data)).size == (90, 60)


def test_every_row_has_the_declared_columns_in_order(mixed_run):
    """A column added to export_row must be declared in ROW_TYPES (TSV header, Parquet schema)."""
    from focuscrawl.corpus import iter_entries, score_names
    from focuscrawl.export.formats import columns, export_row
    from focuscrawl.export.images import ExportedImage

    scores = score_names(mixed_run)
    entry = next(iter_entries(mixed_run))
    assert list(export_row(1, entry, scores, ExportedImage("success"))) == columns(scores)
