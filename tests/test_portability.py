"""What a reader's machine may lack: a browser (skipped with a hint, but never under CI)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT, find_chromium

NEEDS_A_BROWSER = '''
def test_needs_a_browser(chromium_path):
    assert chromium_path
'''


def _run_with(environment: dict, tmp_path: Path) -> subprocess.CompletedProcess:
    (tmp_path / "test_needs_browser.py").write_text(NEEDS_A_BROWSER)
    (tmp_path / "conftest.py").write_text((ROOT / "tests" / "conftest.py").read_text())
    env = {key: value for key, value in os.environ.items() if key != "CI"}
    env.update(environment)
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider", str(tmp_path)],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)


def test_without_a_browser_the_browser_tests_skip_and_say_how_to_get_one(tmp_path):
    result = _run_with({"CHROMIUM": str(tmp_path / "no-such-browser")}, tmp_path)
    assert result.returncode == 0, result.stdout[-2000:]
    assert "1 skipped" in result.stdout and "apt-get install chromium" in result.stdout


def test_under_ci_a_missing_browser_fails(tmp_path):
    result = _run_with({"CHROMIUM": str(tmp_path / "no-such-browser"), "CI": "true"}, tmp_path)
    assert result.returncode == 1 and "CI must run the browser tests" in result.stdout


def test_chromium_names_the_browser_to_use(tmp_path, monkeypatch):
    fake = tmp_path / "my-chrome"
    fake.write_text("#!/bin/sh\n")
    fake.chmod(0o755)
    monkeypatch.setenv("CHROMIUM", str(fake))
    assert find_chromium() == str(fake)
    monkeypatch.setenv("CHROMIUM", str(tmp_path / "missing"))
    assert find_chromium() is None
