"""float32 linear layers on CPU through oneDNN instead of MKL's sgemm, for inference passes.

``torch.nn.functional.linear`` on a CPU calls MKL's sgemm. On the AMD EPYC (Zen 4, AVX-512) machines this
project is built on, MKL runs at 60-75 GFLOP/s a core for the shapes of a small model's layers, while
oneDNN's matmul, given a weight reordered once into its blocked layout, runs at 85-95
(``benchmarks/bench_cpu_linears.py`` prints both). :class:`OneDNNLinears` is a torch function mode: inside
it, every float32 ``F.linear`` on a CPU tensor of at least :data:`MIN_ROWS` rows with gradients off runs
through oneDNN, each weight reordered on first use and kept; nothing else changes, and the model is not
modified. Results equal ``F.linear``'s within float32 rounding (the sums run in another order).

Used by :class:`~finelogic.models.hf.HFBackend` around the forward passes of ``generate``,
``loglikelihood`` and ``hidden_states_batch`` (``cpu_linears="auto"``, its default). Not for training: the
oneDNN op has no backward, so with gradients on the mode leaves ``F.linear`` alone.
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


#: Below this many rows (a single decoding step of one sequence) MKL's matrix-vector path is as fast or
#: faster for most of a small model's shapes (``benchmarks/bench_cpu_linears.py``), so it is left to MKL.
MIN_ROWS = 2


class OneDNNLinears(TorchFunctionMode):
    """Inside: float32 CPU ``F.linear`` of at least ``MIN_ROWS`` rows without gradients runs on oneDNN
    with reordered weights.

    A reordered weight is kept while its weight lives (one extra copy of every linear weight used; 0.55 GB
    for SmolLM2-135M). A weight changed in place since it was reordered (an optimiser step) is
    reordered again: its version counter has moved.
    """

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
    """The tensor's in-place version counter; None for an inference tensor, which keeps none (made under
    ``torch.inference_mode``: such a weight can change in place only inside that mode, unseen here)."""
    return None if tensor.is_inference() else tensor._version
