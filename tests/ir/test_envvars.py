"""``eggpu.ir.envvars.getenv`` is ``os.environ.get`` (the launch path reads two variables with it)."""

from __future__ import annotations

import os

import pytest

from eggpu.ir import envvars


@pytest.mark.parametrize("fast", [True, False])
def test_getenv_sees_every_change_made_through_os_environ(monkeypatch, fast):
    if not fast:
        monkeypatch.setattr(envvars, "_DATA", None)
    name = "EGGPU_TEST_ENVVARS_X"
    monkeypatch.delenv(name, raising=False)
    assert envvars.getenv(name, "dflt") == "dflt"
    monkeypatch.setenv(name, "gpu")
    assert envvars.getenv(name, "dflt") == "gpu" == os.environ.get(name)
    os.environ[name] = "  Interpret "
    assert envvars.getenv(name, "dflt") == "  Interpret "
    os.environ[name] = "é\udcff"  # a non-ASCII value and an undecodable byte round-trip as os.environ's
    assert envvars.getenv(name, "dflt") == os.environ[name]
    del os.environ[name]
    assert envvars.getenv(name, "") == ""
