"""`LOADERS`: corpus name (its folder in the datasets dir) -> `Loader`.

Kept in a submodule (re-exported as `sources.LOADERS`) so that it imports the same whether
`sources` is loaded as a regular package or, under a stale editable install, as a namespace."""
from __future__ import annotations

from pipeline.core.registry import Registry
from sources import (ambigqa, banking77, bfcl, lmsys_arena, massive, mrpc, paws, paws_x, qqp, sharegpt,
                     triviaqa, wildchat, xquad)
from sources.base import Loader

LOADERS: Registry[Loader] = Registry("corpus")
for _module in (banking77, massive, bfcl, paws, paws_x, mrpc, qqp, ambigqa, triviaqa, xquad, sharegpt,
                lmsys_arena, wildchat):
    LOADERS.register(_module.LOADER.name, _module.LOADER)
