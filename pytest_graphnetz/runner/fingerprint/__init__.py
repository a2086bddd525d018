"""Content fingerprints (sha256 hex) of task data, built models and code, stable across processes.

- :func:`data_fingerprint`: every tensor of the data (features, edges, labels, split masks...)
  by name, dtype, shape and bytes. Two runs pair only when this matches per seed.
- :func:`model_fingerprint`: the *built* model (repr, parameter/buffer names, shapes, dtypes
  and initial bytes), the code of its user-defined module classes and the factory's identity.
  Whatever changes the built model — source, a global, an env var, a config file — changes it.
- :func:`callable_identity`: a function's qualified name and a hash of its *normalised* code:
  the syntax tree without docstrings, so comments, docstrings and formatting do not count, while
  every name, number and statement does — plus the module-level functions, classes and plain
  constants of its own module that it names (a helper or a ``DROPOUT = 0.5`` used in ``forward``).
- :func:`project_code_key`: the normalised code of the project definitions (not a library's)
  that callables or scripts reach, transitively, with every module-level statement that is not
  a definition (:mod:`.reach`; whole modules where reach cannot be seen), and the versions of
  the libraries they import; :func:`project_code_files`, the files that key holds.
  :func:`interpreter_identity`: a Python interpreter by what it is.
- :func:`callable_state` and :func:`data_files_stamp` (with :func:`recording_opened_files` and
  :func:`recording_environment`): what a loader or factory carries, the files and environment
  variables it read, so a cache hit can skip running it.

One module per concept: :mod:`.content` (data and models), :mod:`.code` (a callable's code),
:mod:`.project` (the project's modules), with :mod:`.locate` (where a module is found) and
:mod:`.libraries` (what is not the user's code), and :mod:`.loader` (what a loader reads).
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
