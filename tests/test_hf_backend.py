"""HFBackend on the embedded SmolLM2: the three verbs, and the packed paths equal one pass per request
(the tests' own references below, and benchmarks/reference_paths.py)."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from finelogic.models import GenerationConfig
from model_fixtures import hf_backend, model_cache  # noqa: F401  (fixtures)
from reference_paths import one_pass_per_pair, one_pass_per_prefix

FRANCE = [{"role": "user", "content": "What is the capital of France?"}]
COLOUR = [{"role": "user", "content": "Name a colour."}]
SKY = [{"role": "system", "content": "You answer in one word."},
       {"role": "user", "content": "Is the sky blue? Answer yes or no."}]
GREEDY = GenerationConfig(max_new_tokens=12)


def test_greedy_chat_answer_uses_the_chat_template(hf_backend):
    assert hf_backend.generate([FRANCE], GREEDY) == ["The capital of France is Paris."]


def test_batched_generation_equals_one_by_one_in_input_order(hf_backend):
    batched = hf_backend.generate([FRANCE, COLOUR, SKY], GREEDY)
    singles = [hf_backend.generate([c], GREEDY)[0] for c in (FRANCE, COLOUR, SKY)]
    assert batched == singles
    assert batched[0] == "The capital of France is Paris." and batched[2] == "No."


def test_stop_string_cuts_the_text_and_ends_generation_early(hf_backend):
    hf_backend.stats.reset()
    assert hf_backend.generate([FRANCE], GenerationConfig(max_new_tokens=12, stop=(" of",))) == ["The capital"]
    assert hf_backend.stats.generated_tokens == 3  # "The", " capital", " of": then it stopped


def test_seeded_sampling_is_reproducible(hf_backend):
    config = GenerationConfig(max_new_tokens=8, temperature=0.7, top_p=0.9, seed=3)
    first = hf_backend.generate([FRANCE, FRANCE], config)
    assert first == hf_backend.generate([FRANCE, FRANCE], config)
    assert first[0] != "The capital of France is"  # it did sample


def test_loglikelihood_moves_context_whitespace_onto_the_continuation(hf_backend):
    moved, plain, london = hf_backend.loglikelihood([("The capital of France is ", "Paris"),
                                                     ("The capital of France is", " Paris"),
                                                     ("The capital of France is", " London")])
    assert moved == plain
    assert plain[1:] == (1, True) and plain[0] == pytest.approx(-0.2581, abs=1e-3)
    assert london[1:] == (1, False) and london[0] == pytest.approx(-4.3843, abs=1e-3)


def test_empty_context_is_scored_after_the_bos_token(hf_backend):
    (logprob, n, _), = hf_backend.loglikelihood([("", "The")])
    assert n == 1 and logprob == pytest.approx(-8.2157, abs=1e-3)


def naive_loglikelihood(backend, context: str, continuation: str) -> tuple[float, int, bool]:
    """Reference: one full forward pass per request, written without the backend's helpers."""
    tok, model = backend.tokenizer, backend.model
    stripped = context.rstrip()
    continuation = context[len(stripped):] + continuation
    whole = tok(stripped + continuation, add_special_tokens=False).input_ids
    n_ctx = len(tok(stripped, add_special_tokens=False).input_ids)
    with torch.inference_mode():
        logprobs = torch.log_softmax(model(torch.tensor([whole])).logits[0, :-1], -1)
    targets = whole[n_ctx:]
    rows = logprobs[n_ctx - 1:]
    picked = [rows[i, t].item() for i, t in enumerate(targets)]
    return sum(picked), len(targets), all(rows[i].argmax().item() == t for i, t in enumerate(targets))


def test_shared_context_kv_reuse_equals_one_pass_per_choice(hf_backend):
    context = ("Facts: the cat is red. If something is red then it is big. If something is big then it "
               "is kind. The dog is blue. Question: is the cat kind? Answer:")
    choices = [" yes", " no, the cat is not kind", " unknown", " the dog is blue and big"]
    requests = [(context, c) for c in choices] + [("2, 4, 6, 8,", " 10")]
    fast = hf_backend.loglikelihood(requests)  # both contexts and all five continuations in one packed pass
    slow = [naive_loglikelihood(hf_backend, c, x) for c, x in requests]
    assert [r[1:] for r in fast] == [r[1:] for r in slow]
    assert [r[1] for r in fast] == [1, 7, 1, 6, 3]  # digits are single tokens: " ", "1", "0"
    assert max(abs(a[0] - b[0]) for a, b in zip(fast, slow)) < 1e-4
    assert max(abs(a[0] - b[0]) for a, b in zip(one_pass_per_pair(hf_backend, requests), slow)) < 1e-4


PROOF = ("Facts: fact1: A is B. fact2: B is C. fact3: C is D.\nProof: fact1 & fact2 -> int1: A is C. "
         "int1 & fact3 -> int2: A is D. int2 -> hypothesis.")
GENERATION_PROMPT = "<|im_end|>\n<|im_start|>assistant\n"


def step_boundaries(text: str) -> list[int]:
    """Character offsets just after each proof step's final period."""
    start = text.index("Proof:")
    return [i + 1 for i, ch in enumerate(text) if ch == "." and i > start]


def naive_state(backend, text: str, layer: int = -1) -> np.ndarray:
    ids = backend.tokenizer(text, add_special_tokens=False).input_ids
    with torch.inference_mode():
        out = backend.model(torch.tensor([ids]), output_hidden_states=True)
    return out.hidden_states[layer][0, -1].numpy()


def test_one_pass_hidden_states_equal_one_pass_per_prefix(hf_backend):
    bounds = step_boundaries(PROOF)
    assert len(bounds) == 3
    hf_backend.stats.reset()
    states = hf_backend.hidden_states(PROOF, bounds)
    assert hf_backend.stats.calls == 1
    assert states.shape == (3, 576) and states.dtype == np.float32
    reference = np.stack([naive_state(hf_backend, PROOF[:b]) for b in bounds])
    assert np.abs(states - reference).max() < 1e-4
    middle = hf_backend.hidden_states(PROOF, bounds, layer=15)
    assert np.abs(middle[1] - naive_state(hf_backend, PROOF[:bounds[1]], layer=15)).max() < 1e-4


def test_suffix_after_each_boundary_reuses_the_prefix_cache(hf_backend):
    bounds = step_boundaries(PROOF)
    hf_backend.stats.reset()
    states = hf_backend.hidden_states(PROOF, bounds, suffixes=GENERATION_PROMPT)
    # Two passes: the text, then its 3 suffixes packed in one block on the text's KV cache, each suffix
    # seeing the text up to its boundary only; the text's tokens are fed once.
    assert hf_backend.stats.calls == 2
    reference = np.stack([naive_state(hf_backend, PROOF[:b] + GENERATION_PROMPT) for b in bounds])
    assert states.shape == (3, 576) and np.abs(states - reference).max() < 1e-4
    naive = one_pass_per_prefix(hf_backend, PROOF, bounds, suffixes=GENERATION_PROMPT)
    assert np.abs(states - naive).max() < 1e-4


def test_candidate_suffixes_per_boundary(hf_backend):
    bounds = step_boundaries(PROOF)[:2]
    candidates = [[" fact4: E is F.", " int2: A is D."], [" int2 -> hypothesis."]]
    states = hf_backend.hidden_states(PROOF, bounds, suffixes=candidates, normalize=True)
    assert [s.shape for s in states] == [(2, 576), (1, 576)]
    assert np.allclose(np.linalg.norm(states[0], axis=1), 1.0, atol=1e-5)
    expected = naive_state(hf_backend, PROOF[:bounds[0]] + " int2: A is D.")
    assert np.abs(states[0][1] - expected / np.linalg.norm(expected)).max() < 1e-5


def test_candidates_that_start_alike_feed_their_common_tokens_once(hf_backend):
    text = "The cat sat on the mat."
    candidates = [" The dog ran home.", " The dog sat down.", " A bird sang."]
    encode = lambda s: hf_backend.tokenizer(s, add_special_tokens=False).input_ids
    ran, sat = encode(candidates[0]), encode(candidates[1])
    common = next(k for k, (a, b) in enumerate(zip(ran, sat)) if a != b)
    assert common >= 2  # " The dog"
    hf_backend.stats.reset()
    states = hf_backend.hidden_states(text, [len(text)], suffixes=[candidates])
    assert hf_backend.stats.prompt_tokens == len(encode(text)) + sum(len(encode(c)) for c in candidates) - common
    naive = one_pass_per_prefix(hf_backend, text, [len(text)], suffixes=[candidates])
    assert states[0].shape == (3, 576) and np.abs(states[0] - naive[0]).max() < 1e-4


def test_last_layer_is_read_after_the_final_norm(hf_backend):
    """lm_head applied to the returned last-layer state reproduces the logits: it is lm_head's input."""
    text = "The capital of France is"
    state = hf_backend.hidden_states(text, [len(text)])[0]
    ids = hf_backend.tokenizer(text, add_special_tokens=False).input_ids
    with torch.inference_mode():
        logits = hf_backend.model(torch.tensor([ids])).logits[0, -1]
        from_state = hf_backend.model.lm_head(torch.from_numpy(state))
    assert torch.allclose(from_state, logits, atol=1e-4)


def test_token_boundaries_and_bad_boundaries(hf_backend):
    text = "one two three four"
    by_token = hf_backend.hidden_states(text, [1, 3], unit="token")
    by_char = hf_backend.hidden_states(text, [3, 13])  # "one" | " two three"
    assert np.abs(by_token - by_char).max() < 1e-5
    with pytest.raises(ValueError, match="strictly increasing"):
        hf_backend.hidden_states(text, [5, 5])
    with pytest.raises(ValueError, match="beyond"):
        hf_backend.hidden_states(text, [100])


def echo_from_hf(backend, text: str, *, shifted: bool) -> dict:
    """What a server would echo for ``text``, built from HF's log-probs: correctly aligned, or
    shifted the way llama-cpp-python 0.3.36 does it (row i of the log-probs read at token i)."""
    ids = backend.tokenizer(text, add_special_tokens=False).input_ids
    with torch.inference_mode():
        logprobs = torch.log_softmax(backend.model(torch.tensor([ids])).logits[0], -1)
    pieces = [backend.tokenizer.decode(ids[:i + 1])[len(backend.tokenizer.decode(ids[:i])):] for i in range(len(ids))]
    offsets = [len(backend.tokenizer.decode(ids[:i])) for i in range(len(ids))]
    token_logprobs, tops = [None], [None]
    for i in range(1, len(ids)):
        row = logprobs[i] if shifted else logprobs[i - 1]
        best = row.argmax().item()
        token_logprobs.append(row[ids[i]].item())
        tops.append({backend.tokenizer.decode([best]): row[best].item(), pieces[i]: row[ids[i]].item()})
    return {"tokens": pieces, "token_logprobs": token_logprobs, "text_offset": offsets, "top_logprobs": tops}


def test_echo_self_check_accepts_a_true_alignment_and_rejects_the_llama_cpp_shift(hf_backend):
    from finelogic.models.openai_backend import ALIGNMENT_PROBE, alignment_problem

    assert alignment_problem(echo_from_hf(hf_backend, ALIGNMENT_PROBE, shifted=False), ALIGNMENT_PROBE) is None
    problem = alignment_problem(echo_from_hf(hf_backend, ALIGNMENT_PROBE, shifted=True), ALIGNMENT_PROBE)
    assert problem is not None and "token i+1" in problem


def test_a_local_path_and_a_random_control_load_through_the_same_constructor(hf_backend, model_cache):
    from finelogic.models import HFBackend, random_init_like

    request = [("The capital of France is", " Paris")]
    from_path = HFBackend(str(model_cache / "models" / "smollm2-135m-instruct-f32"))
    assert from_path.loglikelihood(request) == hf_backend.loglikelihood(request)
    control = HFBackend(random_init_like(hf_backend.model, seed=0), tokenizer=hf_backend.tokenizer)
    (logprob, n, _), = control.loglikelihood(request)
    assert n == 1 and logprob == pytest.approx(-np.log(49152), abs=1.5)  # near uniform, where trained: -0.26


# ------------------------------------------------------------------ batching across items

LOGIC = ("Facts: the cat is red. If something is red then it is big. If something is big then it is kind. "
         "Question: is the cat kind? Answer:")
MANY_OPTIONS = [" yes", " no", " unknown", " maybe", " the cat is kind", " it is not said", " red", " big",
                " kind", " no, the dog is"]


def cross_item_requests() -> list[tuple[str, str]]:
    """Six contexts of different lengths (two batches of 4 contexts), one with ten options (three
    continuation passes of 4 rows), one-token and many-token continuations, and one single request."""
    contexts = [LOGIC, "2, 4, 6, 8,", "The capital of France is", "A", "Socrates is a man. All men are",
                "Q: Is the sky blue? A:"]
    options = [MANY_OPTIONS, [" 10", " 12", " eleven"], [" Paris", " London"], [" B", " b c d e f"],
               [" mortal", " happy"], [" yes", " no"]]
    return [(c, o) for c, opts in zip(contexts, options) for o in opts] + [("Hello there", " friend")]


def assert_same_scores(fast, slow):
    assert [r[1:] for r in fast] == [r[1:] for r in slow]
    assert max(abs(a[0] - b[0]) for a, b in zip(fast, slow)) < 1e-4


def test_many_contexts_share_one_pass_and_equal_one_pass_per_request(hf_backend):
    requests = cross_item_requests()
    hf_backend.stats.reset()
    fast = hf_backend.loglikelihood(requests)
    # seven contexts, four per pass, each packed with all its continuations: 2 passes
    assert hf_backend.stats.calls == 2
    fed = hf_backend.stats.prompt_tokens
    hf_backend.stats.reset()
    assert_same_scores(one_pass_per_pair(hf_backend, requests), fast)
    assert fed < hf_backend.stats.prompt_tokens / 2  # each context once, not once per option
    slow = [naive_loglikelihood(hf_backend, c, x) for c, x in requests]
    assert_same_scores(fast, slow)
    assert fast[MANY_OPTIONS.index(" yes")][0] > fast[MANY_OPTIONS.index(" red")][0]
    # the same requests in another order give the same numbers (batches change, answers do not)
    reordered = hf_backend.loglikelihood(requests[::-1])[::-1]
    assert_same_scores(reordered, fast)


def test_cross_item_batching_is_exact_on_a_random_init_model(hf_backend):
    from finelogic.models import HFBackend, random_init_like

    control = HFBackend(random_init_like(hf_backend.model, seed=1), tokenizer=hf_backend.tokenizer, batch_size=3)
    requests = cross_item_requests()
    fast = control.loglikelihood(requests)
    assert_same_scores(fast, one_pass_per_pair(control, requests))


def test_hidden_states_batch_equals_one_request_at_a_time(hf_backend):
    from finelogic.models.base import StatesRequest

    bounds = step_boundaries(PROOF)
    short = "One two three. Four five six."
    requests = [StatesRequest(PROOF, bounds, {"layer": -1}),
                StatesRequest(short, [14, 29], {"layer": 5, "normalize": True,
                                                "suffixes": [[" x", " yy zz"], [" q"]]}),
                StatesRequest(PROOF[:60], [20, 60], {"suffixes": GENERATION_PROMPT}),
                StatesRequest("The capital of France is", [24], {}),
                StatesRequest(short, [3, 14], {"unit": "char", "suffixes": ["!", " and"]})]
    hf_backend.stats.reset()
    batched = hf_backend.hidden_states_batch(requests)
    # 5 texts, no two of them within 10% of each other's length, so one batch each (padding would cost as
    # much as real tokens): a pass over the text, and for the 3 with suffixes one over their suffix block
    assert hf_backend.stats.calls == 8
    for request, got in zip(requests, batched):
        alone = one_pass_per_prefix(hf_backend, request.text, request.boundaries, **request.options)
        if isinstance(alone, list):
            assert [a.shape for a in got] == [a.shape for a in alone]
            assert max(np.abs(a - b).max() for a, b in zip(got, alone)) < 1e-4
        else:
            assert got.shape == alone.shape and np.abs(got - alone).max() < 1e-4
    assert batched[1][0].shape == (2, 576) and np.allclose(np.linalg.norm(batched[1][0], axis=1), 1, atol=1e-5)


def test_hidden_states_batch_encodes_the_shared_prefix_once(hf_backend):
    from finelogic.models.base import StatesRequest

    requests = [StatesRequest(PROOF, step_boundaries(PROOF), {"suffixes": GENERATION_PROMPT}),
                StatesRequest(PROOF[:60], [20, 60], {"suffixes": [[" x", " yy zz"], [" q"]]}),
                StatesRequest(PROOF[:40], [40], {"layer": 7})]
    hf_backend.stats.reset()
    batched = hf_backend.hidden_states_batch(requests)
    together = hf_backend.stats.prompt_tokens
    hf_backend.stats.reset()
    alone = [hf_backend.hidden_states_batch([r])[0] for r in requests]
    # the three texts share their first tokens: fed once, not three times
    assert together < hf_backend.stats.prompt_tokens
    assert max(np.abs(a - b).max() for got, ref in zip(batched, alone) for a, b in zip(got, ref)) < 1e-4


def test_a_kept_stop_string_ends_the_completion_and_stays_in_it():
    from finelogic.models.base import GenerationConfig, truncate_at_stop

    text = "Step 1: ... so the hypothesis holds. __PROVED__ and then more text __DISPROVED__"
    assert truncate_at_stop(text, ("__PROVED__", "__DISPROVED__")) == "Step 1: ... so the hypothesis holds. "
    assert truncate_at_stop(text, ("__PROVED__", "__DISPROVED__"), keep=True) == \
        "Step 1: ... so the hypothesis holds. __PROVED__"
    assert truncate_at_stop("no marker", ("__PROVED__",), keep=True) == "no marker"
    # the cache key of a plain decoding did not change when keep_stop was added
    assert "keep_stop" not in GenerationConfig().as_dict()
    assert GenerationConfig(keep_stop=True).as_dict()["keep_stop"] is True


def test_generation_stops_right_after_a_kept_stop_string(hf_backend):
    from finelogic.models.base import GenerationConfig

    conversation = [{"role": "user", "content": "Count from 1 to 20, separated by spaces."}]
    plain = hf_backend.generate([conversation], GenerationConfig(max_new_tokens=48))[0]
    assert " 5" in plain  # what the model says without a stop string
    kept = hf_backend.generate([conversation], GenerationConfig(max_new_tokens=48, stop=(" 5",), keep_stop=True))[0]
    assert kept.endswith(" 5") and plain.startswith(kept) and kept.finish_reason == "stop"
