"""In-process backend: a transformers causal LM (the embedded SmolLM2 by default, or any hub model). Token
prefixes shared within a batch of log-likelihood or hidden-states requests are encoded once; continuations and
suffixes run packed under prefix-tree attention masks; generation is transformers' ``generate``. The plain
paths they are measured and tested against (one pass per pair, one pass per prefix) are
``benchmarks/reference_paths.py``."""
from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any, Callable, NamedTuple, Sequence

import numpy as np
import torch
from tqdm import tqdm  # plain bars: tqdm.auto needs ipywidgets inside notebooks
from transformers import StoppingCriteria
from transformers.cache_utils import Cache, DynamicLayer

from finelogic.models.base import (BackendStats, Completion, Conversation, encode_pair, GenerationConfig,
                                   LoglikelihoodResult, prompt_token_ids, StatesRequest, template_of,
                                   truncate_at_stop)


Suffixes = str | Sequence[str] | Sequence[Sequence[str]] | None


class HFBackend:
    """A transformers model in this process: ``model`` None (the embedded SmolLM2-135M-Instruct), a hub name or
    path, or a loaded model; ``tokenizer`` where the model's ``name_or_path`` leads to none; ``device_map="auto"``
    spreads a large model over the visible GPUs (else it goes to ``device``); ``batch_size`` sequences per pass."""

    def __init__(self, model: Any = None, tokenizer: Any = None, *, device: str = "cpu",
                 dtype: torch.dtype = torch.float32, batch_size: int = 8, device_map: str | None = None) -> None:
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
        """Complete each conversation as the assistant's next turn (as plain text without a chat template:
        :func:`~finelogic.models.base.completion_prompt`), ``batch_size`` prompts at a time, longest
        first; sampling is seeded per batch, and ``on_result(index, completion)`` runs as each batch ends."""
        prompts = [prompt_token_ids(self.tokenizer, c) for c in conversations]
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

    @property
    def template(self) -> str:
        """How conversations reach the model: ``"chat"`` (its chat template) or ``"completion"`` (plain text)."""
        return template_of(self.tokenizer)

    def _generate_batch(self, prompts: list[list[int]], config: GenerationConfig) -> list[str]:
        from transformers import StoppingCriteriaList

        pad, eos = self.tokenizer.pad_token_id, self.tokenizer.eos_token_id
        input_ids, attention_mask = _left_pad(prompts, pad, self.device)
        sample = not config.greedy
        kwargs: dict[str, Any] = dict(max_new_tokens=config.max_new_tokens, pad_token_id=pad, eos_token_id=eos,
                                      do_sample=sample, temperature=config.temperature if sample else None,
                                      top_p=config.top_p if sample else None, top_k=None)
        if config.stop:
            kwargs["stopping_criteria"] = StoppingCriteriaList([_StopStrings(self.tokenizer, config.stop,
                                                                             input_ids.shape[1])])
        with torch.random.fork_rng(devices=[] if self.device.type == "cpu" else [self.device]):
            if config.seed is not None:
                torch.manual_seed(config.seed)
            output = self.model.generate(input_ids=input_ids, attention_mask=attention_mask, **kwargs)
        new = output[:, input_ids.shape[1]:]
        lengths = [row.index(eos) + 1 if eos in row else len(row) for row in new.tolist()]
        self.stats.add(calls=1, prompt_tokens=sum(map(len, prompts)), generated_tokens=sum(lengths))
        texts = self.tokenizer.batch_decode(new, skip_special_tokens=True)
        completions = []
        for text, length in zip(texts, lengths):
            cut = truncate_at_stop(text, config.stop, keep=config.keep_stop)
            ended = length < config.max_new_tokens or len(cut) < len(text)
            completions.append(Completion(cut, "stop" if ended else "length"))
        return completions

    def _prefix_rows(self, sequences: list[list[int]], lengths: list[int]) -> tuple[Any, torch.Tensor] | None:
        """The KV cache of each row's prefix ``sequences[r][:lengths[r]]`` and its ``(rows, width)`` mask, each
        distinct prefix encoded once in one left-padded pass (length 0: fully masked); None if no row has one."""
        distinct = list(dict.fromkeys(tuple(s[:n]) for s, n in zip(sequences, lengths) if n))
        if not distinct:
            return None
        ids, mask = _left_pad([list(d) for d in distinct], self.tokenizer.pad_token_id, self.device)
        out = self.model(input_ids=ids, attention_mask=mask, position_ids=(mask.cumsum(-1) - 1).clamp(min=0),
                         use_cache=True, logits_to_keep=1)
        self.stats.add(calls=1, prompt_tokens=sum(map(len, distinct)))
        index = {d: k for k, d in enumerate(distinct)}
        rows = [index[tuple(s[:n])] if n else 0 for s, n in zip(sequences, lengths)]
        _, row_mask = _left_pad([s[:n] for s, n in zip(sequences, lengths)], self.tokenizer.pad_token_id, self.device)
        return _select_cache(out.cache, rows), row_mask

    # ------------------------------------------------------------- loglikelihood
    @torch.inference_mode()
    def loglikelihood(self, requests: Sequence[tuple[str, str]], *,
                      on_result: Callable[[int, LoglikelihoodResult], None] | None = None) -> list[LoglikelihoodResult]:
        """Score each continuation given its context, tokenised as lm-eval does (:func:`.base.encode_pair`);
        ``on_result(index, score)`` runs as each batch is scored."""
        tokenizer = self.tokenizer
        first = tokenizer.bos_token_id if tokenizer.bos_token_id is not None else tokenizer.eos_token_id
        encoded = [encode_pair(c, x, self._encode, first) for c, x in requests]
        results: list[LoglikelihoodResult | None] = [None] * len(encoded)
        groups: dict[tuple[int, ...], list[int]] = {}  # one row per distinct context; longest first: little padding
        for i, (ctx, _) in enumerate(encoded):
            groups.setdefault(tuple(ctx), []).append(i)
        ordered = sorted(groups.values(), key=lambda ids: -len(encoded[ids[0]][0]))
        with tqdm(total=len(encoded), desc="loglikelihood", disable=len(encoded) < 64) as bar:
            for start in range(0, len(ordered), self.batch_size):
                batch = ordered[start:start + self.batch_size]
                scores = self._score_packed([encoded[ids[0]][0] for ids in batch],
                                            [[encoded[i][1] for i in ids] for ids in batch])
                for ids, group_scores in zip(batch, scores):
                    for i, score in zip(ids, group_scores):
                        results[i] = score
                        if on_result is not None:
                            on_result(i, score)
                bar.update(sum(map(len, batch)))
        return results  # type: ignore[return-value]

    def _encode(self, text: str) -> list[int]:
        return self.tokenizer(text, add_special_tokens=False).input_ids

    def _score_packed(self, contexts: list[list[int]],
                      continuations: list[list[list[int]]]) -> list[list[LoglikelihoodResult]]:
        """Several contexts' continuations in one forward pass, a row ``[left pad][context][each continuation but
        its last token][right pad]`` per context: a continuation sees its context and its own earlier tokens,
        positions continuing from the context's end, so the last ``1 + widest block`` logits are all the scores
        need. A prefix the contexts share is read from its KV cache (``_prefix_rows``)."""
        lengths = _shared_prefixes(contexts) if len(contexts) > 1 else [0]
        prefix = self._prefix_rows(contexts, lengths)
        shared = 0 if prefix is None else prefix[1].shape[1]
        contexts = [ctx[n:] for ctx, n in zip(contexts, lengths)]
        blocks = [[t for cont in conts for t in cont[:-1]] for conts in continuations]
        longest, block = max(map(len, contexts)), max(map(len, blocks))
        width = longest + block
        input_ids, positions, allowed = self._packed_inputs(len(contexts), width, shared)
        for row, (ctx, conts, tokens, offset) in enumerate(zip(contexts, continuations, blocks, lengths)):
            start, end = longest - len(ctx), longest + len(tokens)
            input_ids[row, start:end] = torch.tensor(ctx + tokens)
            if prefix is not None:  # every real token sees the row's shared prefix
                allowed[row, 0, start:end, :shared] = prefix[1][row].bool().cpu()
            positions[row, start:longest] = torch.arange(offset, offset + len(ctx))
            at, context = shared + longest, slice(shared + start, shared + longest)
            allowed[row, 0, start:longest, context] = torch.ones(len(ctx), len(ctx), dtype=torch.bool).tril()
            for cont in conts:
                n = len(cont) - 1
                positions[row, at - shared:at - shared + n] = torch.arange(offset + len(ctx), offset + len(ctx) + n)
                allowed[row, 0, at - shared:at - shared + n, context] = True
                allowed[row, 0, at - shared:at - shared + n, at:at + n] = torch.ones(n, n, dtype=torch.bool).tril()
                at += n
        logits = self.model(input_ids=input_ids.to(self.device), attention_mask=self._additive_mask(allowed),
                            position_ids=positions.to(self.device), use_cache=prefix is not None,
                            cache=None if prefix is None else prefix[0],
                            logits_to_keep=block + 1).logits  # column 0: the context's last token
        self.stats.add(calls=1, prompt_tokens=sum(map(len, contexts)) + sum(map(len, blocks)))
        grouped = []
        for row, conts in enumerate(continuations):
            scores, at = [], 1
            for cont in conts:
                n = len(cont) - 1
                scores.append(_score(torch.cat([logits[row, :1], logits[row, at:at + n]]), cont))
                at += n
            grouped.append(scores)
        return grouped

    # ------------------------------------------------------------- hidden states
    @torch.inference_mode()
    def hidden_states(self, text: str, boundaries: Sequence[int], *, layer: int = -1, suffixes: Suffixes = None,
                      normalize: bool = False, unit: str = "char") -> np.ndarray | list[np.ndarray]:
        """float32 representations of the prefixes ``text[:b]`` for every boundary ``b``, from one forward pass:
        ``(len(boundaries), hidden_size)``, the state at the last token of each prefix (+suffix); with candidate
        lists, one ``(len(candidates_i), hidden_size)`` array per boundary.

        ``boundaries`` are increasing character offsets (``unit="char"``; the text is tokenised piece by piece
        between them) or token counts of ``encode(text)`` (``unit="token"``). ``layer`` 0 is the embeddings, -1
        the last layer after the final norm (the input of ``lm_head``, what the paper's vLLM embedding read-out
        used). ``suffixes``, read after each boundary on the text's KV cache: one string for all, one per
        boundary, or one list of candidates per boundary."""
        options = dict(layer=layer, suffixes=suffixes, normalize=normalize, unit=unit)
        return self.hidden_states_batch([StatesRequest(text, boundaries, options)])[0]

    @torch.inference_mode()
    def hidden_states_batch(self, requests: Sequence[StatesRequest]) -> list[np.ndarray | list[np.ndarray]]:
        """``hidden_states`` for each request, ``batch_size`` texts per left-padded pass (equal within float32
        noise: padding reorders a few sums)."""
        prepared = [self._prepare_states(r) for r in requests]
        states = self._states_batched(prepared)
        return [_finish_states(s, p) for s, p in zip(states, prepared)]

    def _prepare_states(self, request: StatesRequest) -> "_PreparedStates":
        options = dict(request.options)
        unknown = set(options) - {"layer", "suffixes", "normalize", "unit"}
        if unknown:
            raise TypeError(f"hidden_states got unexpected options {sorted(unknown)}")
        ids, ends = self._prefix_tokens(request.text, request.boundaries, options.get("unit", "char"))
        texts, nested = _normalise_suffixes(options.get("suffixes"), len(ends))
        candidates = None if texts is None else [[self._encode(t) for t in choices] for choices in texts]
        if candidates is not None and not all(all(choices) for choices in candidates):
            raise ValueError("every suffix must add at least one token")
        return _PreparedStates(ids, ends, candidates, int(options.get("layer", -1)),
                               bool(options.get("normalize", False)), nested)

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

    def _states_batched(self, items: list["_PreparedStates"]) -> list[list[torch.Tensor]]:
        """Per item, one ``(n_i, hidden)`` tensor per boundary. The prefix all texts share is encoded once; each
        text then runs once, and all its suffixes (packed by :func:`_pack`) in a second pass on its KV cache, beside
        texts of nearly the same length (``_length_buckets``): padding costs as much as tokens."""
        from transformers import DynamicCache

        results: list[list[torch.Tensor]] = [[] for _ in items]
        packed = [_pack(item) for item in items]
        # Reads must fall after the shared prefix; a single text gains nothing from a separate pass.
        shared = 0 if len(items) < 2 else min(_common_prefix([item.ids for item in items]),
                                              min(min(min(w) for w in p.reads) for p in packed))
        prefix_cache = None
        if shared:
            out = self.model(input_ids=torch.tensor([items[0].ids[:shared]], device=self.device), use_cache=True,
                             logits_to_keep=1)
            self.stats.add(calls=1, prompt_tokens=shared)
            prefix_cache = out.cache
        # Only the last layer is read: the decoder's output (after the final norm) without the LM head.
        last_only = all(item.layer in (-1, self.model.config.num_hidden_layers) for item in items)
        for batch in tqdm(_length_buckets([p.text - shared for p in packed], self.batch_size),
                          desc="hidden states", disable=len(items) < 64):
            cache = _select_cache(prefix_cache, [0] * len(batch)) if shared else DynamicCache()
            texts = [packed[i].text - shared for i in batch]
            blocks = [len(packed[i].ids) - packed[i].text for i in batch]
            width, block = max(texts), max(blocks)
            # Pass 1: the texts after the shared prefix, left-padded, keeping their KV cache.
            input_ids, positions, allowed = self._packed_inputs(len(batch), width, shared)
            for row, i in enumerate(batch):
                p, pad = packed[i], width - texts[row]
                input_ids[row, pad:] = torch.tensor(p.ids[shared:p.text])
                positions[row, pad:] = torch.tensor(p.positions[shared:p.text])
                allowed[row, 0, pad:, :shared] = p.visible[shared:p.text, :shared]
                allowed[row, 0, pad:, shared + pad:] = p.visible[shared:p.text, shared:p.text]
            text_states = self._forward_layer(input_ids, positions, allowed, cache, last_only, batch, items)
            self.stats.add(calls=1, prompt_tokens=sum(texts))
            # Pass 2: every text's suffix block, right-padded, on that cache (keys: prefix, texts, blocks).
            block_states = None
            if block:
                input_ids, positions, allowed = self._packed_inputs(len(batch), block, shared + width)
                for row, i in enumerate(batch):
                    p, pad, n = packed[i], width - texts[row], blocks[row]
                    input_ids[row, :n] = torch.tensor(p.ids[p.text:])
                    positions[row, :n] = torch.tensor(p.positions[p.text:])
                    allowed[row, 0, :n, :shared] = p.visible[p.text:, :shared]
                    allowed[row, 0, :n, shared + pad:shared + width] = p.visible[p.text:, shared:p.text]
                    allowed[row, 0, :n, shared + width:shared + width + n] = p.visible[p.text:, p.text:]
                block_states = self._forward_layer(input_ids, positions, allowed, cache, last_only, batch, items)
                self.stats.add(calls=1, prompt_tokens=sum(blocks))
            for row, i in enumerate(batch):
                p, pad = packed[i], width - texts[row]
                at = [[(w - shared + pad) if w < p.text else (w - p.text) for w in where] for where in p.reads]
                results[i] = [torch.stack([(text_states if w < p.text else block_states)[row][a]
                                           for w, a in zip(where, ats)]) for where, ats in zip(p.reads, at)]
        return results

    def _packed_inputs(self, rows: int, width: int, past: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Padded ``(rows, width)`` input and position ids and the ``(rows, 1, width, past + width)`` bool
        attention mask of one pass; a padding token sees only itself (no row of the mask is empty)."""
        input_ids = torch.full((rows, width), self.tokenizer.pad_token_id, dtype=torch.long)
        allowed = torch.zeros((rows, 1, width, past + width), dtype=torch.bool)
        allowed[:, 0, :, past:] = torch.eye(width, dtype=torch.bool)
        return input_ids, torch.zeros((rows, width), dtype=torch.long), allowed

    def _additive_mask(self, allowed: torch.Tensor) -> torch.Tensor:
        """The bool mask ``allowed`` as the model's additive float mask: 0 where allowed, the dtype's minimum else."""
        dtype = next(self.model.parameters()).dtype
        return torch.zeros(allowed.shape, dtype=dtype).masked_fill_(~allowed, torch.finfo(dtype).min).to(self.device)

    def _forward_layer(self, input_ids: torch.Tensor, positions: torch.Tensor, allowed: torch.Tensor, cache: Any,
                       last_only: bool, batch: list[int], items: list["_PreparedStates"]) -> list[torch.Tensor]:
        """Per row, the hidden states of its item's layer at every position; extends ``cache``."""
        out = self.model.base_model(input_ids=input_ids.to(self.device), attention_mask=self._additive_mask(allowed),
                                    position_ids=positions.to(self.device), cache=cache, use_cache=True,
                                    output_hidden_states=not last_only)
        if last_only:
            return list(out.last_hidden_state)
        return [out.hidden_states[items[i].layer][row] for row, i in enumerate(batch)]


@dataclass(frozen=True)
class _PreparedStates:
    """A hidden-states request in tokens: the text's ids, each boundary's end, each boundary's suffixes."""

    ids: list[int]
    ends: list[int]
    candidates: list[list[list[int]]] | None
    layer: int
    normalize: bool
    nested: bool


class _Packed(NamedTuple):
    """One text and its suffixes as one sequence (see ``HFBackend._states_batched``)."""

    ids: list[int]  # the text's tokens, then the suffix tokens of every boundary
    positions: list[int]  # a suffix token's position continues from its boundary
    visible: torch.Tensor  # (n, n) bool: what each token may attend to
    reads: list[list[int]]  # per boundary, where its states are read (its last token, or each suffix's last)
    text: int  # tokens of the text


def _pack(item: _PreparedStates) -> _Packed:
    """``item`` as one sequence: a boundary's suffixes form a token tree (suffixes that start alike share those
    tokens); a suffix token sees the text up to its boundary and its ancestors in the tree."""
    ids, positions = list(item.ids), list(range(len(item.ids)))
    parents: list[tuple[int, int]] = []  # per suffix token: (its parent in the sequence or -1, boundary end)
    reads: list[list[int]] = []
    for b, end in enumerate(item.ends):
        if item.candidates is None:
            reads.append([end - 1])
            continue
        tree: dict[tuple[int, int], int] = {}  # (parent, token) -> index in the sequence
        where = []
        for option in item.candidates[b]:
            node = -1
            for depth, token in enumerate(option):
                if (node, token) not in tree:
                    tree[node, token] = len(ids)
                    parents.append((node, end))
                    ids.append(token)
                    positions.append(end + depth)
                node = tree[node, token]
            where.append(node)
        reads.append(where)
    n, text = len(ids), len(item.ids)
    visible = torch.zeros((n, n), dtype=torch.bool)
    visible[:text, :text] = torch.ones((text, text), dtype=torch.bool).tril()
    for k, (parent, end) in enumerate(parents, start=text):
        if parent < 0:
            visible[k, :end] = True
        else:
            visible[k] = visible[parent]
        visible[k, k] = True
    return _Packed(ids, positions, visible, reads, text)


def _finish_states(states: list[torch.Tensor], prepared: _PreparedStates) -> np.ndarray | list[np.ndarray]:
    """float32 arrays, normalised if asked, in the shape ``hidden_states`` documents."""
    arrays = [s.float().cpu().numpy().astype(np.float32) for s in states]
    if prepared.normalize:
        arrays = [a / np.linalg.norm(a, axis=-1, keepdims=True) for a in arrays]
    return arrays if prepared.nested else np.stack([a[0] for a in arrays])


def _length_buckets(lengths: Sequence[int], size: int, slack: float = 0.1) -> list[list[int]]:
    """Indices in batches of at most ``size``, longest first, each length within ``slack`` of its batch's longest."""
    order = sorted(range(len(lengths)), key=lambda i: -lengths[i])
    batches: list[list[int]] = []
    for i in order:
        if batches and len(batches[-1]) < size and lengths[i] >= (1 - slack) * lengths[batches[-1][0]]:
            batches[-1].append(i)
        else:
            batches.append([i])
    return batches


def _common_prefix(sequences: list[list[int]], leave: int = 1) -> int:
    """Length of the longest token prefix all ``sequences`` share, leaving each at least ``leave`` tokens."""
    shortest = min(map(len, sequences))
    first = sequences[0]
    n = 0
    while n < shortest - leave and all(s[n] == first[n] for s in sequences):
        n += 1
    return n


#: Tokens below which a shared prefix is not worth its own pass (LogicMark's "If:\n" is not; a system prompt is).
MIN_SHARED_PREFIX = 16


def _shared_prefixes(sequences: list[list[int]], minimum: int = MIN_SHARED_PREFIX) -> list[int]:
    """Per sequence, the length of its prefix to encode once: the longest it shares with another sequence
    (leaving it one token; 0 below ``minimum``), or the prefix all share where that feeds fewer tokens (nested
    prefixes repeat their common part). Sorted, a sequence's longest shared prefix is with a neighbour."""
    order = sorted(range(len(sequences)), key=sequences.__getitem__)
    best = [0] * len(sequences)
    for a, b in zip(order, order[1:]):
        n = _common_prefix([sequences[a], sequences[b]], leave=0)
        best[a], best[b] = max(best[a], n), max(best[b], n)
    lengths = [min(n, len(s) - 1) for n, s in zip(best, sequences)]
    per_row = [n if n >= minimum else 0 for n in lengths]
    common = _common_prefix(sequences) if len(sequences) > 1 else 0
    everyone = [common if common >= minimum else 0] * len(sequences)
    return min(per_row, everyone, key=lambda shared: _tokens_fed(sequences, shared))


def _tokens_fed(sequences: list[list[int]], shared: list[int]) -> int:
    """Tokens encoded when each distinct prefix ``sequences[r][:shared[r]]`` is encoded once, then every rest."""
    distinct = {tuple(s[:n]) for s, n in zip(sequences, shared) if n}
    return sum(map(len, distinct)) + sum(len(s) - n for s, n in zip(sequences, shared))


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


def _select_cache(cache: Any, rows: Sequence[int]) -> Any:
    """A new :func:`_growing_cache` whose batch row ``k`` is row ``rows[k]`` of ``cache`` (rows may repeat)."""
    index = torch.tensor(list(rows), device=cache.layers[0].keys.device)
    new = _growing_cache(len(cache.layers), 0)
    for number, layer in enumerate(cache.layers):
        new.update(layer.keys.index_select(0, index), layer.values.index_select(0, index), number)
    return new


class _GrowingLayer(DynamicLayer):
    """A ``DynamicLayer`` keeping ``room`` free positions, so a decoding step writes its column in place instead
    of concatenating (a copy of the whole cache per step); it grows only when an update does not fit."""

    def __init__(self, room: int) -> None:
        super().__init__()
        self.room = room
        self.buffers: tuple[torch.Tensor, torch.Tensor] | None = None

    def update(self, keys: torch.Tensor, values: torch.Tensor, *args: Any, **kwargs: Any) -> tuple:
        if not self.is_initialized:
            self.lazy_initialization(keys, values)
        held, new = self.get_seq_length(), keys.shape[-2]
        if self.buffers is None or held + new > self.buffers[0].shape[-2]:
            size = (*keys.shape[:-2], held + new + self.room, keys.shape[-1])
            grown = keys.new_empty(size), values.new_empty(size)
            if held:
                grown[0][..., :held, :], grown[1][..., :held, :] = self.keys, self.values
            self.buffers = grown
        self.buffers[0][..., held:held + new, :] = keys
        self.buffers[1][..., held:held + new, :] = values
        self.keys, self.values = (b[..., :held + new, :] for b in self.buffers)
        return self.keys, self.values

    def batch_select_indices(self, indices: torch.Tensor) -> None:
        if self.buffers is not None:
            held = self.get_seq_length()
            self.buffers = tuple(b[indices] for b in self.buffers)
            self.keys, self.values = (b[..., :held, :] for b in self.buffers)


def _growing_cache(layers: int, room: int) -> Cache:
    """A KV cache of :class:`_GrowingLayer` s (``room`` free positions each)."""
    return Cache(layers=[_GrowingLayer(room) for _ in range(layers)])


def _score(logits: torch.Tensor, continuation: list[int]) -> LoglikelihoodResult:
    """Sum of log-probs of ``continuation`` under ``logits`` (shape (len(continuation), vocab))."""
    logprobs = torch.log_softmax(logits.float(), dim=-1)
    target = torch.tensor(continuation, device=logits.device)
    picked = logprobs.gather(-1, target[:, None])[:, 0]
    greedy = bool((logprobs.argmax(-1) == target).all())
    return float(picked.sum()), len(continuation), greedy


class _StopStrings(StoppingCriteria):
    """A row is done once its generated text holds a stop string; only the last tokens are decoded per step
    (a stop string of L characters spans at most L tokens, caught at the step that completes it)."""

    def __init__(self, tokenizer: Any, stop: Sequence[str], prompt_length: int) -> None:
        self.tokenizer = tokenizer
        self.stop = [s for s in stop if s]
        self.prompt_length = prompt_length
        self.window = max(map(len, self.stop)) + 1

    def __call__(self, input_ids: torch.Tensor, scores: torch.Tensor, **kwargs: Any) -> torch.Tensor:
        new = input_ids[:, self.prompt_length:]
        return torch.tensor(self.hit(new[:, -self.window:].tolist()), device=input_ids.device)

    def hit(self, generated: Sequence[Sequence[int]]) -> list[bool]:
        """Per row of generated token ids: whether its last tokens hold a stop string."""
        tails = self.tokenizer.batch_decode([list(row[-self.window:]) for row in generated], skip_special_tokens=True)
        return [any(s in t for s in self.stop) for t in tails]
