"""Content fingerprints (sha256 hex) of task data, built models and code, stable across processes.

One module per concept, each saying what its functions hash: :mod:`.content` (data and models),
:mod:`.code` (a callable's code), :mod:`.project` (the project's modules, at the grain of the
definitions a run reaches, :mod:`.reach`), with :mod:`.locate` (where a module is found) and
:mod:`.libraries` (what is not the user's code), :mod:`.loader` (what a loader reads) and
:mod:`.interpreter` (an interpreter by what it is).
"""

from __future__ import annotations

from pytest_graphnetz.runner.fingerprint.code import (
    callable_identity,
    names_in_code,
    normalised_source,
)
from pytest_graphnetz.runner.fingerprint.content import (
    data_fingerprint,
    file_sha256,
    model_fingerprint,
)
from pytest_graphnetz.runner.fingerprint.interpreter import interpreter_identity, looks_like_python
from pytest_graphnetz.runner.fingerprint.libraries import in_library_location
from pytest_graphnetz.runner.fingerprint.loader import (
    callable_state,
    data_files_stamp,
    environment_unchanged,
    files_under,
    recording_environment,
    recording_opened_files,
)
from pytest_graphnetz.runner.fingerprint.project import (
    is_project_file,
    module_digest,
    project_code_files,
    project_code_key,
)

__all__ = [
    "callable_identity", "callable_state", "data_files_stamp", "data_fingerprint",
    "environment_unchanged", "file_sha256", "files_under",
    "in_library_location", "interpreter_identity", "is_project_file", "looks_like_python",
    "model_fingerprint", "module_digest", "names_in_code", "normalised_source",
    "project_code_files", "project_code_key", "recording_environment", "recording_opened_files",
]
