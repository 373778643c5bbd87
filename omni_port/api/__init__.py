"""The public API: omni-port's stages as functions on text, paths and release specs.

The command line, the tests and the benchmarks all go through these functions; nobody
rebuilds the pipeline by hand. Text in, values out:

- ``parse_upstream(text)`` -> ``Upstream``: an upstream module given as text;
- ``extract_text(text, base=...)`` -> ``Extraction``: one runner module's pieces;
- ``sync_patches(patches, upstream)`` -> ``Synced``: the generated modules and their lock;
- ``port_text(runner, base, upstream)`` -> ``Ported``: extract then sync, one module.

Specs and paths (read inputs, download releases into the cache; they never write):

- ``load_upstream(spec, settings)``, ``load_runners(specs, settings)``,
  ``read_patches(directory)``, ``read_lock(directory)``;
- ``extract(sources, base, options)`` -> ``(PatchSet, findings)``;
- ``sync(patches_dir, upstream, transplants=...)`` -> ``Synced``;
- ``verify(generated_dir, patches_dir, settings)`` -> ``Verified``;
- ``check(inputs, settings)`` -> findings;
- ``sync_workspace(request, settings)``, ``upgrade(request, settings)``,
  ``rank_bases(runners, settings)``: the workflows of ``sync``, ``upgrade`` and ``bases``.

These names are what a user calls (``__all__``). The command line imports nothing but this
package; what it needs beyond ``__all__`` is in these namespaces, each with its own
``__all__`` (``NAMESPACES``):

- one function per command: ``checking.check_workspace`` (`check`, cached),
  ``delta.gpu_delta`` (`gpu-delta`), ``decisions.resolve`` and ``decisions.adopt``,
  ``continuation.continue_workspace`` (`continue`), ``workspace.init_workspace`` (`init`),
  ``v2.report`` and ``v2.generate`` (`v2-report`, `v2-sync`), with
  ``workflows`` (the sticky upstream, the best base), ``inputs`` (what `extract` and
  `upgrade` read) and ``resolution`` (what `verify` says is left);
- ``model`` (records, codes, ``BadInput``), ``report`` (findings as text and JSON),
  ``files`` (configuration, lock, transactions, text I/O), ``patches`` (patch files
  rendered, planned and diffed) and ``writing`` (output trees and patch sets staged in the
  command's transaction, hand edits of generated runners kept).

Loading is lazy (PEP 562): a name loads its stage on first use, so that a `check` answered
from its cache parses nothing and loads no stage.

Writing the results (atomically) is the caller's business: ``api.writing`` stages them in
the command's transaction (``api.files``).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from omni_port.api import (
        checking as checking,
    )
    from omni_port.api import (
        continuation as continuation,
    )
    from omni_port.api import (
        decisions as decisions,
    )
    from omni_port.api import (
        delta as delta,
    )
    from omni_port.api import (
        files as files,
    )
    from omni_port.api import (
        inputs as inputs,
    )
    from omni_port.api import (
        model as model,
    )
    from omni_port.api import (
        patches as patches,
    )
    from omni_port.api import (
        report as report,
    )
    from omni_port.api import (
        resolution as resolution,
    )
    from omni_port.api import (
        v2 as v2,
    )
    from omni_port.api import (
        workflows as workflows,
    )
    from omni_port.api import (
        workspace as workspace,
    )
    from omni_port.api.gate import check
    from omni_port.api.inputs import load_runners, load_upstream, read_lock, read_patches
    from omni_port.api.run import Synced, sync_patches
    from omni_port.api.settings import Settings
    from omni_port.api.stages import (
        Ported,
        Verified,
        extract,
        extract_text,
        parse_upstream,
        port_text,
        sync,
        verify,
    )
    from omni_port.api.workflows import (
        SyncRequest,
        UpgradeRequest,
        rank_bases,
        sync_workspace,
        upgrade,
    )
    from omni_port.extract.extractor import Extraction, ExtractOptions
    from omni_port.model import Upstream
    from omni_port.sources.workspace import CheckInputs

__all__ = [
    "CheckInputs",
    "ExtractOptions",
    "Extraction",
    "Ported",
    "Settings",
    "SyncRequest",
    "Synced",
    "UpgradeRequest",
    "Upstream",
    "Verified",
    "check",
    "extract",
    "extract_text",
    "load_runners",
    "load_upstream",
    "parse_upstream",
    "port_text",
    "rank_bases",
    "read_lock",
    "read_patches",
    "sync",
    "sync_patches",
    "sync_workspace",
    "upgrade",
    "verify",
]

#: The namespaces the command line (and any caller) may use beyond ``__all__``.
NAMESPACES = (
    "checking",
    "continuation",
    "decisions",
    "delta",
    "files",
    "inputs",
    "model",
    "patches",
    "report",
    "resolution",
    "v2",
    "workflows",
    "workspace",
    "writing",
)

#: Where each name of ``__all__`` is defined, imported on first use.
_DEFINED_IN = {
    "CheckInputs": "omni_port.sources.workspace",
    "ExtractOptions": "omni_port.extract.extractor",
    "Extraction": "omni_port.extract.extractor",
    "Ported": "omni_port.api.stages",
    "Settings": "omni_port.api.settings",
    "SyncRequest": "omni_port.api.workflows",
    "Synced": "omni_port.api.run",
    "UpgradeRequest": "omni_port.api.workflows",
    "Upstream": "omni_port.model",
    "Verified": "omni_port.api.stages",
    "check": "omni_port.api.gate",
    "extract": "omni_port.api.stages",
    "extract_text": "omni_port.api.stages",
    "load_runners": "omni_port.api.inputs",
    "load_upstream": "omni_port.api.inputs",
    "parse_upstream": "omni_port.api.stages",
    "port_text": "omni_port.api.stages",
    "rank_bases": "omni_port.api.workflows",
    "read_lock": "omni_port.api.inputs",
    "read_patches": "omni_port.api.inputs",
    "sync": "omni_port.api.stages",
    "sync_patches": "omni_port.api.run",
    "sync_workspace": "omni_port.api.workflows",
    "upgrade": "omni_port.api.workflows",
    "verify": "omni_port.api.stages",
}


def __getattr__(name: str) -> object:
    """A name of ``__all__`` (or a submodule), loaded on first use and kept."""
    where = _DEFINED_IN.get(name)
    if where is None:
        try:
            return importlib.import_module(f"{__name__}.{name}")
        except ModuleNotFoundError as error:
            if error.name != f"{__name__}.{name}":
                raise
            raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None
    value = getattr(importlib.import_module(where), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__, *NAMESPACES})
