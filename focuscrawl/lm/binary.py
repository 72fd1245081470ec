"""KenLM binary models from ARPA files, with KenLM's own ``build_binary``.

The ``kenlm`` Python module reads binaries but cannot write them; ``install.sh``
compiles ``build_binary`` from the kenlm sdist into ``.venv/bin`` (needs g++ and zlib).
A binary loads in a fraction of the ARPA's time, which matters for large models.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path


def find_build_binary() -> str | None:
    """``$KENLM_BUILD_BINARY``, then ``build_binary`` beside this Python, then PATH."""
    if os.environ.get("KENLM_BUILD_BINARY"):
        return os.environ["KENLM_BUILD_BINARY"]
    beside = Path(sys.executable).parent / "build_binary"
    if beside.is_file() and os.access(beside, os.X_OK):
        return str(beside)
    return shutil.which("build_binary")


def write_binary(arpa: str | Path, output: str | Path, structure: str = "probing",
                 build_binary: str | None = None) -> Path:
    """Convert an ARPA model to a KenLM binary (``probing``: fastest; ``trie``: smallest).

    Written to ``OUT.part`` and renamed, so a failed run leaves no half file.
    """
    if structure not in ("probing", "trie"):
        raise ValueError(f"binary structure {structure!r}: expected probing or trie")
    tool = build_binary or find_build_binary()
    if not tool:
        raise FileNotFoundError("KenLM's build_binary not found: run install.sh (needs g++ and zlib) "
                                "or set KENLM_BUILD_BINARY")
    output = Path(output)
    tmp = output.with_name(output.name + ".part")
    try:
        sort = ["-S", "10%"] if structure == "trie" else []  # trie sorts on disk; probing is in RAM
        done = subprocess.run([tool, *sort, structure, str(arpa), str(tmp)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        if done.returncode:
            last = (done.stderr.strip().splitlines() or ["?"])[-1]
            raise ValueError(f"build_binary failed on {arpa}: {last}")
        tmp.replace(output)
    finally:
        tmp.unlink(missing_ok=True)
    return output
