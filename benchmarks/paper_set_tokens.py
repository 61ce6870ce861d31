"""Tokens per paper-size training set, per style, as the TRL path trains them (prompt + completion through
the chat template, cut at the recipe's 2,500 tokens), for the reproduce page's cost estimate.

Counted with the embedded SmolLM2 tokenizer (the package ships no Llama or Qwen tokenizer: a paper model's
own count differs somewhat). Reads the sets from the store (a paper run builds them; otherwise
this builds them, minutes per style).

Run: .venv/bin/python benchmarks/paper_set_tokens.py
"""
from __future__ import annotations

from finelogic.models.embedded import load_default
from finelogic.runs.supervision import style_examples
from finelogic.sft.recipes import value

STYLES = ("NL", "Symb-Struct", "Symb-Filter", "Symb-Direct", "LogiPT")


def main() -> None:
    from finelogic.models.base import chat_token_ids

    tokenizer, _ = load_default()
    cutoff = value("cutoff_len")
    print("style,examples,tokens,target_tokens,at_cutoff")
    for style in STYLES:
        _, examples = style_examples("paper", style, 0)
        tokens = targets = cut = 0
        for example in examples:
            messages = example["messages"]
            prompt = len(chat_token_ids(tokenizer, messages[:-1]))
            full = len(chat_token_ids(tokenizer, messages, add_generation_prompt=False))
            tokens += min(full, cutoff)
            targets += max(0, min(full, cutoff) - prompt)
            cut += full > cutoff
        print(f"{style},{len(examples)},{tokens},{targets},{cut}")


if __name__ == "__main__":
    main()
