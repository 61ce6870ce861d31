"""One entry point for the offline generators of :mod:`finelogic.data.generators`, each imported when asked for."""
from __future__ import annotations

from typing import Any

from finelogic.data.problem import Problem

GENERATORS = ("fld", "prontoqa", "logicmark", "fld_paper_test", "fld_paper_train")


def generate(name: str, n: int | None = None, seed: int = 0, **kwargs: Any) -> list[Problem]:
    """Problems of generator ``name``, deterministic in ``seed``; ``kwargs`` go to the generator. ``n`` defaults
    to 500 for ``prontoqa`` (the real set's size) and to ``Config.limit`` for ``logicmark``; ``fld`` needs it;
    the paper's designs ``fld_paper_test`` / ``fld_paper_train`` take ``scale`` instead."""
    if n is not None and n < 0:
        raise ValueError(f"generate({name!r}): n must be 0 or more, got {n}")
    if name == "prontoqa":
        from finelogic.data.generators.prontoqa import generate_prontoqa

        return generate_prontoqa(500 if n is None else n, seed=seed, **kwargs)
    if name == "logicmark":
        from finelogic.data.generators.logicmark import Config, generate_logicmark

        sized = {"limit": n} if n is not None else {}
        return generate_logicmark(Config(seed=seed, **sized, **kwargs))
    if name == "fld":
        if n is None:
            raise ValueError("generate('fld') needs n; the paper's fixed designs are "
                             "'fld_paper_test' and 'fld_paper_train'")
        from finelogic.data.generators.fld import generate_fld

        return generate_fld(n, seed=seed, **kwargs)
    if name in ("fld_paper_test", "fld_paper_train"):
        if n is not None:
            raise ValueError(f"{name} has the paper's fixed size; pass scale=... instead of n")
        from finelogic.data.generators.fld import fld_paper_plan, generate_from_plan

        scale = kwargs.pop("scale", 1.0)
        return generate_from_plan(fld_paper_plan(name.removeprefix("fld_paper_"), scale), seed, **kwargs)
    raise ValueError(f"unknown generator {name!r}; expected one of {GENERATORS}")
