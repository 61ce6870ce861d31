"""Fetching the published files from their public homes: pinned commits, SHA-256 checks, the same loaders.

No test touches the network: the downloads are served from the real files in ``../shared/data`` (byte-
identical to the pinned git blobs) by a handed-in opener.
"""
from __future__ import annotations

import subprocess
import sys

import pytest

from finelogic.data.datasets import DATASETS, dataset, load_dataset
from finelogic.data.loaders.remote import FetchError, fetch


def serve_from(shared_data, requested):
    """An opener that answers a pinned URL with the bytes of the local copy at the same place."""
    def opener(url: str) -> bytes:
        requested.append(url)
        for data in DATASETS:
            for file in data.source.files if data.source else ():
                if url == data.source.url(file):
                    return data.source.local(shared_data, data.name, file).read_bytes()
        raise OSError(f"404 {url}")
    return opener


@pytest.mark.parametrize("name, count", [("folio", 204), ("multi_logieval", 390), ("prontoqa", 500)])
def test_fetched_files_load_with_the_published_counts(shared_data, tmp_path, name, count):
    requested: list[str] = []
    source = dataset(name).source
    root = fetch(name, source, tmp_path / "data", opener=serve_from(shared_data, requested))
    assert len(requested) == len(source.files)
    assert all(f"/{source.commit}/" in url for url in requested)  # the pinned commit, not a branch
    assert len(load_dataset(name, root)) == count


def test_a_second_fetch_downloads_nothing(shared_data, tmp_path):
    requested: list[str] = []
    fetch("folio", dataset("folio").source, tmp_path, opener=serve_from(shared_data, requested))
    fetch("folio", dataset("folio").source, tmp_path, opener=serve_from(shared_data, requested))
    assert requested == ["https://raw.githubusercontent.com/Yale-LILY/FOLIO/"
                         "5d7bb84c7edab3fb358e057d2807f19cf5cf5e2d/data/v0.0/folio-validation.jsonl"]


def test_bytes_other_than_the_pinned_ones_are_an_error_and_not_kept(shared_data, tmp_path):
    def tampered(url: str) -> bytes:
        return (shared_data / "prontoqa" / "dev.json").read_bytes() + b"\n"

    with pytest.raises(FetchError, match=r"dev\.json has SHA-256 [0-9a-f]{64}, expected 2d2e9d0a"):
        fetch("prontoqa", dataset("prontoqa").source, tmp_path, opener=tampered)
    assert not (tmp_path / "prontoqa" / "dev.json").exists()


def test_a_failed_download_names_the_url(tmp_path):
    def refused(url: str) -> bytes:
        raise ConnectionRefusedError("connection refused")

    with pytest.raises(FetchError, match=r"could not fetch https://raw\.githubusercontent\.com/.*dev\.json"):
        fetch("prontoqa", dataset("prontoqa").source, tmp_path, opener=refused)


def test_without_a_data_dir_load_dataset_reads_the_fetched_copy(shared_data, tmp_path, monkeypatch):
    monkeypatch.setenv("FINELOGIC_CACHE", str(tmp_path))
    monkeypatch.delenv("FINELOGIC_DATA_DIR", raising=False)
    fetch("prontoqa", dataset("prontoqa").source, tmp_path / "data", opener=serve_from(shared_data, []))
    problems = load_dataset("prontoqa")  # offline (conftest), but the pinned copy is already there
    assert len(problems) == 500 and problems[0].id == "ProntoQA_1"


def test_offline_the_evaluation_sets_say_so_once_and_use_labelled_stand_ins(tmp_path):
    script = (
        "import logging; logging.basicConfig(level=logging.WARNING)\n"
        "from finelogic.data.suites import evaluation_sets\n"
        "settings = {'fld': {'name': 'fld', 'n': 3, 'depths': (1,)}, 'prontoqa_generated': {'n': 2, 'hops': (3,)},"
        " 'limit': None}\n"
        "for _ in range(2):\n"
        "    print([(s.name, len(s.problems), s.source) for s in evaluation_sets(settings)])\n"
        "import sys; print('hub tried:', 'datasets' in sys.modules)\n"  # offline, the hub is not contacted
    )
    env = {"PATH": "/usr/bin:/bin", "FINELOGIC_OFFLINE": "1", "FINELOGIC_CACHE": str(tmp_path),
           "HOME": str(tmp_path)}
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=300)
    assert result.returncode == 0, result.stderr
    assert result.stderr.count("offline (FINELOGIC_OFFLINE") == 1
    assert "('folio', 0, 'not present')" in result.stdout
    assert "('prontoqa', 2, 'generated stand-in" in result.stdout
    assert "hub tried: False" in result.stdout
