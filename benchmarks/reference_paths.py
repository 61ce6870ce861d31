"""The plain paths the HF backend's packed ones are measured against (``bench_backends.py``,
``bench_speed_paths.py``, ``bench_probing_extraction.py``) and checked against (``tests/test_hf_backend.py``):
one forward pass per (context, continuation), as lm-evaluation-harness scores, and one full forward pass per
hidden-state prefix. They run a :class:`finelogic.models.hf.HFBackend`'s model and tokenizer and count their
work in its ``stats``; the package itself keeps only the packed paths.
"""
from __future__ import annotations

from typing import Any, Sequence

import torch

from finelogic.models.base import LoglikelihoodResult, StatesRequest, encode_pair
from finelogic.models.hf import HFBackend, _finish_states, _left_pad, _score


@torch.inference_mode()
def one_pass_per_pair(backend: HFBackend, requests: Sequence[tuple[str, str]]) -> list[LoglikelihoodResult]:
    """``backend.loglikelihood(requests)`` with one forward pass per (context, continuation), longest first,
    ``backend.batch_size`` left-padded pairs per pass."""
    tokenizer = backend.tokenizer
    first = tokenizer.bos_token_id if tokenizer.bos_token_id is not None else tokenizer.eos_token_id
    encode = lambda text: tokenizer(text, add_special_tokens=False).input_ids  # noqa: E731
    encoded = [encode_pair(c, x, encode, first) for c, x in requests]
    order = sorted(range(len(encoded)), key=lambda i: -sum(map(len, encoded[i])))
    results: list[Any] = [None] * len(encoded)
    for start in range(0, len(order), backend.batch_size):
        batch = order[start:start + backend.batch_size]
        sequences = [(encoded[i][0] + encoded[i][1])[:-1] for i in batch]
        keep = max(len(encoded[i][1]) for i in batch)
        input_ids, attention_mask = _left_pad(sequences, tokenizer.pad_token_id, backend.device)
        position_ids = (attention_mask.cumsum(-1) - 1).clamp(min=0)
        logits = backend.model(input_ids=input_ids, attention_mask=attention_mask, position_ids=position_ids,
                               logits_to_keep=keep, use_cache=False).logits
        backend.stats.add(calls=1, prompt_tokens=sum(map(len, sequences)))
        for row, i in enumerate(batch):
            continuation = encoded[i][1]
            results[i] = _score(logits[row, keep - len(continuation):], continuation)
    return results


@torch.inference_mode()
def one_pass_per_prefix(backend: HFBackend, text: str, boundaries: Sequence[int], **options: Any) -> Any:
    """``backend.hidden_states(text, boundaries, **options)`` with one full forward pass per prefix (and per
    candidate suffix), the same tokens as the packed path reads."""
    prepared = backend._prepare_states(StatesRequest(text, boundaries, options))
    layer = options.get("layer", -1)
    states = []
    for i, end in enumerate(prepared.ends):
        rows = []
        for option in [[]] if prepared.candidates is None else prepared.candidates[i]:
            input_ids = torch.tensor([prepared.ids[:end] + option], device=backend.device)
            out = backend.model(input_ids=input_ids, use_cache=False, output_hidden_states=True, logits_to_keep=1)
            backend.stats.add(calls=1, prompt_tokens=int(input_ids.numel()))
            rows.append(out.hidden_states[layer][0, -1])
        states.append(torch.stack(rows))
    return _finish_states(states, prepared)
