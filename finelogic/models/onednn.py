"""float32 linear layers on CPU through oneDNN (weights reordered once into its blocked layout) instead of
MKL's sgemm, for inference passes (``benchmarks/bench_cpu_linears.py``). Results equal ``F.linear``'s within
float32 rounding; with gradients on (training: the op has no backward) ``F.linear`` is left alone.
"""
from __future__ import annotations

import functools
import weakref
from typing import Any

import torch
from torch.overrides import TorchFunctionMode


@functools.cache
def available() -> bool:
    """Whether this torch build has the oneDNN linear ops (x86 builds do; some ARM builds do not)."""
    try:
        weight = torch.ops.mkldnn._reorder_linear_weight(torch.ones(2, 2), None)
        out = torch.ops.mkldnn._linear_pointwise(torch.ones(1, 2), weight, None, "none", [], "")
    except (AttributeError, RuntimeError, NotImplementedError):
        return False
    return bool(torch.equal(out, torch.full((1, 2), 2.0)))


#: Below this many rows (one sequence's decoding step) MKL's matrix-vector path is as fast: left to MKL.
MIN_ROWS = 2


class OneDNNLinears(TorchFunctionMode):
    """A torch function mode: inside, float32 CPU ``F.linear`` of at least ``MIN_ROWS`` rows without gradients
    runs on oneDNN; a reordered copy is kept while its weight lives and redone when it changes in place."""

    def __init__(self) -> None:
        super().__init__()
        # id(weight) -> (a weak reference to it, its version when reordered, the reordered copy)
        self._reordered: dict[int, tuple[weakref.ref, int | None, torch.Tensor]] = {}

    def __torch_function__(self, func: Any, types: Any, args: tuple = (), kwargs: dict | None = None) -> Any:
        kwargs = kwargs or {}
        if func is torch.nn.functional.linear and not torch.is_grad_enabled():
            x, weight = args[0], args[1]
            bias = args[2] if len(args) > 2 else kwargs.get("bias")
            if (x.device.type == "cpu" and x.dtype == torch.float32 and weight.dtype == torch.float32
                    and weight.dim() == 2 and (bias is None or bias.dtype == torch.float32)
                    and x.numel() >= MIN_ROWS * x.shape[-1]):
                return torch.ops.mkldnn._linear_pointwise(x, self._weight(weight), bias, "none", [], "")
        return func(*args, **kwargs)

    def _weight(self, weight: torch.Tensor) -> torch.Tensor:
        key = id(weight)
        kept = self._reordered.get(key)
        if kept is None or kept[0]() is not weight or kept[1] != _version(weight):
            # A weight that is freed takes its reordered copy with it (a model dropped, a layer replaced).
            alive = weakref.ref(weight, lambda _: self._reordered.pop(key, None))
            kept = (alive, _version(weight), torch.ops.mkldnn._reorder_linear_weight(weight.detach(), None))
            self._reordered[key] = kept
        return kept[2]


def _version(tensor: torch.Tensor) -> int | None:
    """The tensor's in-place version counter; None for an inference tensor, which keeps none."""
    return None if tensor.is_inference() else tensor._version
