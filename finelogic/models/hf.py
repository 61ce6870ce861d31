"""In-process backend: a transformers causal LM (the embedded SmolLM2 by default, or any hub model).

Three verbs, each doing as little model work as the maths allows:

* ``generate``: chat template, left-padded batches of similar length, stop strings.
* ``loglikelihood``: lm-eval's tokenisation; continuations that share a context are scored from
  one forward pass over that context (its KV cache is reused for every continuation).
* ``hidden_states``: one forward pass gives the state at every prefix boundary (causal masking
  makes the state at position t depend on tokens <= t only); suffixes appended after a boundary
  read the text's KV cache through an attention mask that stops at the boundary, batched, instead
  of re-encoding the prefix.

The slow reference paths (one full pass per request / per prefix) stay available
(``share_context=False``, ``reuse_prefix=False``): tests check both give the same numbers.
"""
from __future__ import annotations

import os
from typing import Any, Callable, Sequence

import numpy as np
import torch
from tqdm import tqdm  # plain bars: tqdm.auto needs ipywidgets inside notebooks
from transformers import StoppingCriteria

from finelogic.models.base import (BackendStats, Completion, Conversation, GenerationConfig, LoglikelihoodResult,
                                   split_whitespace, truncate_at_stop)


Suffixes = str | Sequence[str] | Sequence[Sequence[str]] | None


class HFBackend:
    """A transformers model in this process.

    Args:
        model: ``None`` for the embedded SmolLM2-135M-Instruct (``load_default``), a hub name or
            local path for ``from_pretrained``, or an already loaded ``PreTrainedModel``.
        tokenizer: needed only when ``model`` is a loaded model whose ``name_or_path`` does not
            lead to a tokenizer (e.g. ``random_init_like``); a name/path or a tokenizer object.
        device: where to put the model when ``device_map`` is None (``"cpu"``, ``"cuda"``, ...).
        dtype: weights' dtype when loading (float32 on CPU; bfloat16 is usual on GPUs).
        batch_size: sequences per forward/generate call.
        device_map: ``"auto"`` spreads a large model over the visible GPUs (accelerate).
        share_context: score continuations of one context from a shared KV cache (default); False
            runs one full forward pass per (context, continuation), as lm-eval does.
    """

    def __init__(self, model: Any = None, tokenizer: Any = None, *, device: str = "cpu",
                 dtype: torch.dtype = torch.float32, batch_size: int = 8, device_map: str | None = None,
                 share_context: bool = True) -> None:
        from transformers import AutoModelForCausalLM, AutoTokenizer

        if model is None:
            from finelogic.models.embedded import load_default
            default_tokenizer, model = load_default(dtype=dtype)
            tokenizer = default_tokenizer if tokenizer is None else tokenizer
        elif isinstance(model, (str, os.PathLike)):
            tokenizer = tokenizer if tokenizer is not None else AutoTokenizer.from_pretrained(model)
            model = AutoModelForCausalLM.from_pretrained(model, dtype=dtype, device_map=device_map)
        if isinstance(tokenizer, (str, os.PathLike)):
            tokenizer = AutoTokenizer.from_pretrained(tokenizer)
        if tokenizer is None:
            tokenizer = AutoTokenizer.from_pretrained(model.config.name_or_path)
        if device_map is None:
            model = model.to(device)
        self.model = model.eval()
        self.tokenizer = tokenizer
        if tokenizer.pad_token_id is None:
            tokenizer.pad_token = tokenizer.eos_token
        self.batch_size = batch_size
        self.share_context = share_context
        self.stats = BackendStats()

    @property
    def device(self) -> torch.device:
        return self.model.get_input_embeddings().weight.device

    def __repr__(self) -> str:
        return f"HFBackend({self.model.config.name_or_path!r}, device={self.device}, batch_size={self.batch_size})"

    # ------------------------------------------------------------------ generate
    @torch.inference_mode()
    def generate(self, conversations: Sequence[Conversation], config: GenerationConfig = GenerationConfig(),
                 *, on_result: Callable[[int, Completion], None] | None = None) -> list[Completion]:
        """Complete each conversation as the assistant's next turn.

        Args:
            conversations: lists of ``{"role", "content"}`` messages; the chat template and the
                generation prompt are applied here.
            config: decoding parameters; sampling (``temperature > 0``) is seeded per batch.
            on_result: called with (index, completion) as each batch finishes (the cache stores
                answers this way, so a crash loses at most the batch in flight).

        Returns:
            One completion per conversation, in input order, without special tokens, cut before
            the first stop string.
        """
        prompts = [self._chat_ids(c) for c in conversations]
        order = sorted(range(len(prompts)), key=lambda i: -len(prompts[i]))
        results: list[Completion] = [Completion("")] * len(prompts)
        batches = [order[i:i + self.batch_size] for i in range(0, len(order), self.batch_size)]
        for batch in tqdm(batches, desc="generate", disable=len(batches) < 2):
            texts = self._generate_batch([prompts[i] for i in batch], config)
            for i, text in zip(batch, texts):
                results[i] = text
                if on_result is not None:
                    on_result(i, text)
        return results

    def _chat_ids(self, conversation: Conversation) -> list[int]:
        if not getattr(self.tokenizer, "chat_template", None):
            raise ValueError(f"{self!r}: the tokenizer has no chat template; generate() needs a chat model")
        return list(self.tokenizer.apply_chat_template(list(conversation), add_generation_prompt=True,
                                                       tokenize=True))

    def _generate_batch(self, prompts: list[list[int]], config: GenerationConfig) -> list[str]:
        from transformers import StoppingCriteriaList

        input_ids, attention_mask = _left_pad(prompts, self.tokenizer.pad_token_id, self.device)
        kwargs: dict[str, Any] = dict(max_new_tokens=config.max_new_tokens, pad_token_id=self.tokenizer.pad_token_id,
                                      eos_token_id=self.tokenizer.eos_token_id)
        if config.greedy:
            kwargs |= dict(do_sample=False, temperature=None, top_p=None, top_k=None)
        else:
            kwargs |= dict(do_sample=True, temperature=config.temperature, top_p=config.top_p, top_k=None)
        if config.stop:
            kwargs["stopping_criteria"] = StoppingCriteriaList([_StopStrings(self.tokenizer, config.stop,
                                                                             input_ids.shape[1])])
        with torch.random.fork_rng(devices=[] if self.device.type == "cpu" else [self.device]):
            if config.seed is not None:
                torch.manual_seed(config.seed)
            output = self.model.generate(input_ids=input_ids, attention_mask=attention_mask, **kwargs)
        new = output[:, input_ids.shape[1]:]
        lengths = [_length_until(row, self.tokenizer.eos_token_id) for row in new.tolist()]
        self.stats.add(calls=1, prompt_tokens=sum(map(len, prompts)), generated_tokens=sum(lengths))
        texts = self.tokenizer.batch_decode(new, skip_special_tokens=True)
        completions = []
        for text, length in zip(texts, lengths):
            cut = truncate_at_stop(text, config.stop)
            ended = length < config.max_new_tokens or len(cut) < len(text)
            completions.append(Completion(cut, "stop" if ended else "length"))
        return completions

    # ------------------------------------------------------------- loglikelihood
    @torch.inference_mode()
    def loglikelihood(self, requests: Sequence[tuple[str, str]]) -> list[LoglikelihoodResult]:
        """Score each continuation given its context.

        Tokenisation follows lm-eval: trailing whitespace of the context moves onto the
        continuation, context+continuation are encoded together, and the continuation's tokens
        are ``whole[len(encode(context)):]``. An empty context is replaced by the BOS (else EOS) token.

        Returns:
            Per request ``(logprob_sum, n_tokens, is_greedy)``: the sum over continuation tokens of
            log p(token | everything before it) in nats, the number of continuation tokens, and
            whether each continuation token is the argmax at its position.
        """
        encoded = [self._encode_pair(c, x) for c, x in requests]
        groups: dict[tuple[int, ...], list[int]] = {}
        for i, (ctx, _) in enumerate(encoded):
            groups.setdefault(tuple(ctx), []).append(i)
        results: list[LoglikelihoodResult | None] = [None] * len(encoded)
        shared = [ids for ids in groups.values() if len(ids) > 1 and self.share_context]
        singles = sorted((i for ids in groups.values() if len(ids) == 1 or not self.share_context for i in ids),
                         key=lambda i: -sum(map(len, encoded[i])))  # similar lengths share a batch
        batches = [singles[i:i + self.batch_size] for i in range(0, len(singles), self.batch_size)]
        with tqdm(total=len(encoded), desc="loglikelihood", disable=len(encoded) < 64) as bar:
            for ids in shared:
                scores = self._score_shared(encoded[ids[0]][0], [encoded[i][1] for i in ids])
                for i, score in zip(ids, scores):
                    results[i] = score
                bar.update(len(ids))
            for batch in batches:
                for i, score in zip(batch, self._score_full([encoded[i] for i in batch])):
                    results[i] = score
                bar.update(len(batch))
        return results  # type: ignore[return-value]

    def _encode_pair(self, context: str, continuation: str) -> tuple[list[int], list[int]]:
        context, continuation = split_whitespace(context, continuation)
        if not continuation:
            raise ValueError(f"empty continuation for context {context[:40]!r}")
        if not context:
            prefix = self.tokenizer.bos_token_id if self.tokenizer.bos_token_id is not None else self.tokenizer.eos_token_id
            return [prefix], self._encode(continuation)
        whole = self._encode(context + continuation)
        n_context = len(self._encode(context))
        if n_context >= len(whole):
            raise ValueError(f"continuation {continuation[:40]!r} adds no token to its context")
        return whole[:n_context], whole[n_context:]

    def _encode(self, text: str) -> list[int]:
        return self.tokenizer(text, add_special_tokens=False).input_ids

    def _score_full(self, pairs: list[tuple[list[int], list[int]]]) -> list[LoglikelihoodResult]:
        """One forward pass per (context, continuation), batched with left padding."""
        sequences = [(ctx + cont)[:-1] for ctx, cont in pairs]
        keep = max(len(cont) for _, cont in pairs)
        input_ids, attention_mask = _left_pad(sequences, self.tokenizer.pad_token_id, self.device)
        position_ids = (attention_mask.cumsum(-1) - 1).clamp(min=0)
        logits = self.model(input_ids=input_ids, attention_mask=attention_mask, position_ids=position_ids,
                            logits_to_keep=keep, use_cache=False).logits
        self.stats.add(calls=1, prompt_tokens=sum(map(len, sequences)))
        return [_score(logits[row, keep - len(cont):], cont) for row, (_, cont) in enumerate(pairs)]

    def _score_shared(self, context: list[int], continuations: list[list[int]]) -> list[LoglikelihoodResult]:
        """Encode ``context`` once; score every continuation from a copy of its KV cache."""
        ctx = torch.tensor([context], device=self.device)
        out = self.model(input_ids=ctx, use_cache=True, logits_to_keep=1)
        self.stats.add(calls=1, prompt_tokens=len(context))
        first = out.logits[0, -1:]  # predicts every continuation's first token
        results: list[LoglikelihoodResult] = []
        for start in range(0, len(continuations), self.batch_size):
            chunk = continuations[start:start + self.batch_size]
            inputs = [cont[:-1] for cont in chunk]
            width = max(map(len, inputs))
            if width == 0:
                results += [_score(first, cont) for cont in chunk]
                continue
            # Right padding: pads sit after the real tokens, so causal masking hides them.
            padded = torch.tensor([ids + [self.tokenizer.pad_token_id] * (width - len(ids)) for ids in inputs],
                                  device=self.device)
            cache = _copy_cache(out.past_key_values, len(context), len(chunk))
            logits = self.model(input_ids=padded, past_key_values=cache, use_cache=True).logits
            self.stats.add(calls=1, prompt_tokens=sum(map(len, inputs)))
            for row, cont in enumerate(chunk):
                results.append(_score(torch.cat([first, logits[row, :len(cont) - 1]]), cont))
        return results

    # ------------------------------------------------------------- hidden states
    @torch.inference_mode()
    def hidden_states(self, text: str, boundaries: Sequence[int], *, layer: int = -1, suffixes: Suffixes = None,
                      normalize: bool = False, unit: str = "char",
                      reuse_prefix: bool = True) -> np.ndarray | list[np.ndarray]:
        """Representations of the prefixes ``text[:b]`` for every boundary ``b``, from one forward pass.

        Args:
            text: the full text (e.g. a chat-templated problem followed by a whole proof).
            boundaries: increasing prefix ends: character offsets into ``text`` (``unit="char"``)
                or token counts of ``encode(text)`` (``unit="token"``).
            layer: index into the model's hidden states: 0 = embeddings, -1 = last layer. For
                Llama-style models transformers returns the last layer *after* the final RMSNorm
                (the input of ``lm_head``), which is what the paper's vLLM embedding read-out used.
            suffixes: text appended after each boundary before reading out, reusing the text's
                KV cache (masked to the boundary) instead of re-encoding the prefix: one string for
                all boundaries (e.g. the generation prompt), one string per boundary, or one list of
                candidate strings per boundary. All suffixes run batched, ``batch_size`` per call.
            normalize: L2-normalise every returned vector.
            unit: ``"char"`` or ``"token"`` (see ``boundaries``).
            reuse_prefix: False = the naive reference: one full forward pass per prefix (+suffix).

        With ``unit="char"`` the text is tokenised piece by piece between boundaries, so every
        boundary falls between tokens and a prefix's tokens never depend on what follows it. For
        boundaries at the end of a sentence (before a space or newline) this equals tokenising
        the prefix alone.

        Returns:
            float32 arrays. Without suffixes, or with one suffix per boundary: shape
            ``(len(boundaries), hidden_size)``, the state at the last token of prefix (+suffix).
            With candidate lists: a list with one ``(len(candidates_i), hidden_size)`` array per
            boundary.
        """
        ids, ends = self._prefix_tokens(text, boundaries, unit)
        texts, nested = _normalise_suffixes(suffixes, len(ends))
        candidates = None if texts is None else [[self._encode(t) for t in options] for options in texts]
        if candidates is not None and not all(all(options) for options in candidates):
            raise ValueError("every suffix must add at least one token")
        if reuse_prefix:
            states = self._states_one_pass(ids, ends, candidates, layer)
        else:
            states = self._states_naive(ids, ends, candidates, layer)
        states = [s.float().cpu().numpy().astype(np.float32) for s in states]
        if normalize:
            states = [s / np.linalg.norm(s, axis=-1, keepdims=True) for s in states]
        return states if nested else np.stack([s[0] for s in states])

    def _prefix_tokens(self, text: str, boundaries: Sequence[int], unit: str) -> tuple[list[int], list[int]]:
        """Token ids up to the last boundary and, per boundary, its prefix length in tokens."""
        bounds = list(boundaries)
        if not bounds:
            raise ValueError("hidden_states needs at least one boundary")
        if any(b <= a for a, b in zip(bounds, bounds[1:])) or bounds[0] < 1:
            raise ValueError(f"boundaries must be positive and strictly increasing, got {bounds}")
        if unit == "token":
            ids = self._encode(text)
            if bounds[-1] > len(ids):
                raise ValueError(f"boundary {bounds[-1]} beyond the text's {len(ids)} tokens")
            return ids[:bounds[-1]], bounds
        if unit != "char":
            raise ValueError(f"unit must be 'char' or 'token', got {unit!r}")
        if bounds[-1] > len(text):
            raise ValueError(f"boundary {bounds[-1]} beyond the text's {len(text)} characters")
        ids: list[int] = []
        ends = []
        for start, end in zip([0] + bounds, bounds):
            ids += self._encode(text[start:end])
            ends.append(len(ids))
        if len(set(ends)) != len(ends):
            raise ValueError("two boundaries fall on the same token (a piece of whitespace only?)")
        return ids, ends

    def _forward_states(self, input_ids: torch.Tensor, layer: int, cache: Any = None,
                        **kwargs: Any) -> tuple[torch.Tensor, Any]:
        out = self.model(input_ids=input_ids, past_key_values=cache, use_cache=True, output_hidden_states=True,
                         **kwargs)
        self.stats.add(calls=1, prompt_tokens=int(input_ids.numel()))
        return out.hidden_states[layer], out.past_key_values

    def _states_one_pass(self, ids: list[int], ends: list[int], candidates: list[list[list[int]]] | None,
                         layer: int) -> list[torch.Tensor]:
        states, cache = self._forward_states(torch.tensor([ids], device=self.device), layer)
        if candidates is None:
            return [states[0, end - 1][None] for end in ends]
        # Every (boundary, suffix) pair becomes one row of a batch that reads the whole text's KV
        # cache through an attention mask hiding the tokens after that row's boundary; the
        # suffix's position ids continue from the boundary. Exact, and one call per batch of
        # suffixes instead of one per boundary.
        rows = [(end, option) for end, options in zip(ends, candidates) for option in options]
        total = len(ids)
        read: list[torch.Tensor] = []
        for start in range(0, len(rows), self.batch_size):
            chunk = rows[start:start + self.batch_size]
            width = max(len(o) for _, o in chunk)
            padded = torch.tensor([o + [self.tokenizer.pad_token_id] * (width - len(o)) for _, o in chunk],
                                  device=self.device)
            mask = torch.tensor([[1] * end + [0] * (total - end) + [1] * width for end, _ in chunk], device=self.device)
            positions = torch.tensor([list(range(end, end + width)) for end, _ in chunk], device=self.device)
            h, _ = self._forward_states(padded, layer, _copy_cache(cache, total, len(chunk)),
                                        attention_mask=mask, position_ids=positions)
            read += [h[r, len(o) - 1] for r, (_, o) in enumerate(chunk)]
        result, offset = [], 0
        for options in candidates:
            result.append(torch.stack(read[offset:offset + len(options)]))
            offset += len(options)
        return result

    def _states_naive(self, ids: list[int], ends: list[int], candidates: list[list[list[int]]] | None,
                      layer: int) -> list[torch.Tensor]:
        result = []
        for i, end in enumerate(ends):
            options = [[]] if candidates is None else candidates[i]
            rows = [self._forward_states(torch.tensor([ids[:end] + o], device=self.device), layer)[0][0, -1]
                    for o in options]
            result.append(torch.stack(rows))
        return result


def _normalise_suffixes(suffixes: Suffixes, n: int) -> tuple[list[list[str]] | None, bool]:
    """Suffixes as one candidate list per boundary, and whether the caller asked for lists."""
    if suffixes is None:
        return None, False
    if isinstance(suffixes, str):
        return [[suffixes]] * n, False
    if len(suffixes) != n:
        raise ValueError(f"{len(suffixes)} suffix entries for {n} boundaries")
    nested = not all(isinstance(s, str) for s in suffixes)
    return [[s] if isinstance(s, str) else list(s) for s in suffixes], nested


def _left_pad(sequences: list[list[int]], pad_id: int, device: torch.device) -> tuple[torch.Tensor, torch.Tensor]:
    """Shape (batch, longest) ids and attention mask, padding on the left."""
    width = max(map(len, sequences))
    ids = torch.tensor([[pad_id] * (width - len(s)) + list(s) for s in sequences], device=device)
    mask = torch.tensor([[0] * (width - len(s)) + [1] * len(s) for s in sequences], device=device)
    return ids, mask


def _copy_cache(cache: Any, length: int, copies: int) -> Any:
    """A new DynamicCache holding the first ``length`` positions of ``cache``, repeated ``copies`` times."""
    from transformers import DynamicCache

    new = DynamicCache()
    layers = cache.layers if hasattr(cache, "layers") else zip(cache.key_cache, cache.value_cache)
    for index, layer in enumerate(layers):
        keys, values = (layer.keys, layer.values) if hasattr(layer, "keys") else layer
        new.update(keys[:1, :, :length].expand(copies, -1, -1, -1).contiguous(),
                   values[:1, :, :length].expand(copies, -1, -1, -1).contiguous(), index)
    return new


def _score(logits: torch.Tensor, continuation: list[int]) -> LoglikelihoodResult:
    """Sum of log-probs of ``continuation`` under ``logits`` (shape (len(continuation), vocab))."""
    logprobs = torch.log_softmax(logits.float(), dim=-1)
    target = torch.tensor(continuation, device=logits.device)
    picked = logprobs.gather(-1, target[:, None])[:, 0]
    greedy = bool((logprobs.argmax(-1) == target).all())
    return float(picked.sum()), len(continuation), greedy


def _length_until(row: list[int], eos_id: int | None) -> int:
    return row.index(eos_id) + 1 if eos_id in row else len(row)


class _StopStrings(StoppingCriteria):
    """Stopping criterion: a row is done once its generated text contains a stop string.

    Only the last few tokens are decoded per step: a stop string of L characters spans at most L
    tokens, and it is caught at the step whose token completes it.
    """

    def __init__(self, tokenizer: Any, stop: Sequence[str], prompt_length: int) -> None:
        self.tokenizer = tokenizer
        self.stop = [s for s in stop if s]
        self.prompt_length = prompt_length
        self.window = max(map(len, self.stop)) + 1

    def __call__(self, input_ids: torch.Tensor, scores: torch.Tensor, **kwargs: Any) -> torch.Tensor:
        new = input_ids[:, self.prompt_length:]
        tails = self.tokenizer.batch_decode(new[:, -self.window:], skip_special_tokens=True)
        return torch.tensor([any(s in t for s in self.stop) for t in tails], device=input_ids.device)
