"""What a warm session computes, computed for less: the module values of a model record's key
(runner/model_record.py ``module_state``) pick the same modules as resolving every imported
module's path would, through links too. No torch here."""

from __future__ import annotations

import importlib
import json
import os
import sys

import pytest

from pytest_graphnetz.runner.model_record import module_state

MODULE = "WIDTH = 8\nNAMES = ('a', 'b')\n\n\ndef factory():\n    return WIDTH\n"


@pytest.fixture
def linked(tmp_path, monkeypatch):
    """Two scratch modules: ``warm_real_mod`` imported from its own folder, ``warm_linked_mod``
    imported through a symlinked folder (its ``__file__`` is not its real path)."""
    real, link = tmp_path / "real", tmp_path / "link"
    real.mkdir()
    (real / "warm_real_mod.py").write_text(MODULE)
    (real / "warm_linked_mod.py").write_text(MODULE.replace("8", "12"))
    link.symlink_to(real, target_is_directory=True)
    monkeypatch.syspath_prepend(str(link))
    monkeypatch.syspath_prepend(str(real))
    sys.modules.pop("warm_linked_mod", None)
    first = importlib.import_module("warm_real_mod")
    # Imported from the link: drop the real folder from the path for this one import.
    monkeypatch.setattr(sys, "path", [p for p in sys.path if p != str(real)])
    second = importlib.import_module("warm_linked_mod")
    yield real, first, second
    for name in ("warm_real_mod", "warm_linked_mod"):
        sys.modules.pop(name, None)


def _by_resolving(files: set[str]) -> list[str]:
    """The reference: every imported module whose path resolves to one of ``files``."""
    wanted = {os.path.realpath(f) for f in files}
    return sorted(name for name, module in list(sys.modules.items())
                  if isinstance(getattr(module, "__file__", None), str)
                  and os.path.realpath(module.__file__) in wanted)


def test_the_modules_found_are_those_whose_path_resolves_to_a_wanted_file(linked):
    real, first, second = linked
    assert os.path.realpath(second.__file__) != second.__file__
    for files in ({str(real / "warm_real_mod.py")}, {str(real / "warm_linked_mod.py")},
                  {first.__file__, second.__file__}, {str(real / "absent.py")}):
        found = [name for name, _ in json.loads(module_state(frozenset(files)))]
        assert found == _by_resolving(files)
    both = json.loads(module_state(frozenset({first.__file__, second.__file__})))
    assert both == [["warm_linked_mod", [["NAMES", "('a', 'b')"], ["WIDTH", "12"]]],
                    ["warm_real_mod", [["NAMES", "('a', 'b')"], ["WIDTH", "8"]]]]
