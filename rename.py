"""One word per idea (book/design.md, "Glossary"): the renames, as a script that can run again.

    python rename.py          # rewrite the files in place; prints each rule's count
    python rename.py --check  # print what would change, change nothing; exit 1 when something would

Every rule is a word-boundary regular expression whose replacement no rule matches again, so a second run
changes nothing. It reads the package, tests, benchmarks, notebooks and the book's own pages; never
``results/`` (committed results keep their stored names: see the glossary), ``CHANGELOG.md`` (history) or
itself. One module moves: ``finelogic/settings.py`` becomes ``finelogic/typed_config.py`` (``git mv`` when the
old file exists and the new one does not).
"""
from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent
GLOBS = ("finelogic/**/*.py", "finelogic/**/*.yaml", "tests/**/*.py", "benchmarks/**/*.py", "benchmarks/*.md",
         "notebooks/*.ipynb", "book/*.md", "README.md", "Makefile", "_toc.yml")
SKIP = {"rename.py", "CHANGELOG.md"}
KEEP = "rename: " + "keep"
MOVES = (("finelogic/settings.py", "finelogic/typed_config.py"),)

#: (pattern, replacement) everywhere in GLOBS, in order.
EVERYWHERE: tuple[tuple[str, str], ...] = (
    # The released code's behaviour: "released" (the value users pass, the enum members, the names).
    (r"\bPAPER_CODE_COMPAT\b", "RELEASED"),
    (r"\bpaper_code_compat_relevance\b", "released_rule_relevance"),
    (r"\bpaper_code_compat\b", "released"),
    (r"_paper_code_compat\b", "_released"),
    (r"\bCOMPAT_COLUMNS\b", "RELEASED_COLUMNS"),
    (r"\ball_relevant_compat\b", "all_relevant_released"),
    # A family's typed configuration: "config" ("setting" is the paper's prompt setting only).
    (r"\bSettingsError\b", "ConfigError"),
    (r"\b(Accuracy|Claims|Datasets|Depth|LogicMark|Probing|Soundness|Supervision|Toy)Settings\b", r"\1Config"),
    (r"\bsettings_codec\b", "config_codec"),
    (r"\baccuracy_settings\b", "accuracy_config"),
    (r"\bdiffering_settings\b", "differing_config"),
    (r"\bSectionOfRun\b", "ConfigOfRun"),
    (r"\bresolved_section\b", "resolved_config"),
    (r"\bsupervision\.SECTION\b", "supervision.CONFIG_NAME"),
    (r"\bfinelogic\.settings\b", "finelogic.typed_config"),
    (r"\bfinelogic/settings\.py\b", "finelogic/typed_config.py"),
    (r"(?<![\w/.])settings\.py\b", "typed_config.py"),
    (r"\btyped settings\b", "typed config"),
    (r"\bTyped settings\b", "Typed config"),
    (r"\bfamily's settings\b", "family's config"),
    (r"\bsettings dataclass\b", "config dataclass"),
    (r"\bprofile section\b", "profile's config"),
    (r"``(accuracy|soundness|probing|logicmark|sft|datasets|claims)`` section\b", r"``\1`` config"),
    (r"\bwith other(\s+)settings\b", r"with another\1config"),
    (r"\bmade with settings the profile\b", "made with a config the profile"),
    (r"\bthe accuracy(\s+)settings and data\b", r"the accuracy\1config and data"),
    (r"\bone value of those settings\b", "one value of that config"),
    (r"run type,(\s+)profile's config\b", r"run type,\1config name"),
    (r"\bor other settings\b", "or another config"),
    (r"\bthe profile's current settings\b", "the profile's current config"),
    (r"\bunknown decoding setting\b", "unknown decoding key"),
    # The sentences those renames leave ungrammatical.
    (r"config per profile are typed(\s+)values\b", r"config per profile is a typed\1value"),
    (r"family's config are a\b", "family's config is a"),
    (r"Typed config are recorded as the plain data they are made of", "Typed config is recorded as the plain data it is made of"),
    (r"\(profile's config ``sft``\)", "(config ``sft``)"),
    (r"settings of its profile's config\b", "changes to its profile's config"),
    (r"a family's \*\*settings\*\* are its typed run configuration", "a family's **config** is its typed run configuration"),
    (r"unknown setting; the settings of\b", "unknown key; the keys of"),
    # The trainer's record beside its checkpoints is not a result manifest: training.json, not run.json.
    (r"\bRUN_NAME\b", "TRAINING_RECORD"),
    # The SQLite file is the store, also as the command that shows it.
    (r"\bfinelogic cache\b", "finelogic store"),
    (r"\bcache file\b", "store file"),
)

#: (file, pattern, replacement): rules that hold in one file only.
IN_FILE: tuple[tuple[str, str, str], ...] = (
    ("finelogic/sft/trl_train.py", r'TRAINING_RECORD = "run\.json"', 'TRAINING_RECORD = "training.json"'),
    ("finelogic/sft/trl_train.py", r"``run\.json`` holds the data and settings fingerprint",
     "``training.json`` holds the data and config fingerprint"),
    ("finelogic/runs/logicmark.py", r"(?<![.\w])settings\b(?!=(?!=))", "config"),
    ("finelogic/runs/probing.py", r"(?<![.\w])settings\b(?!=(?!=))", "config"),
    ("finelogic/runs/soundness.py", r"(?<![.\w])settings\b(?!=(?!=))", "config"),
    ("finelogic/runs/claims.py", r"(?<![.\w])settings\b(?!=(?!=))", "config"),
    ("finelogic/runs/datasets.py", r"(?<![.\w])settings\b(?!=(?!=))", "config"),
    ("finelogic/sft/trl_train.py", r"holds a run on other data or settings\b", "holds a training on other data or config"),
    ("finelogic/runs/supervision.py", r"\bSECTION\b", "CONFIG_NAME"),
    ("finelogic/runs/supervision.py", r"#: The profile's config it reads", "#: The name of the config it reads"),
    ("finelogic/runs/registry.py", r"    section: str\n", "    config_name: str\n"),
    ("finelogic/runs/registry.py", r"profile ``section`` it reads", "``config_name`` it reads (its errors' path)"),
    ("finelogic/study.py", r"\bentry\.section\b", "entry.config_name"),
    ("finelogic/study.py", r"\(its registry entry names the profile's config\)",
     "(its registry entry's ``config_name``)"),
    ("finelogic/typed_config.py", r"expected a mapping of settings \(", "expected a mapping of config keys ("),
    ("finelogic/book/cli.py", r'sub\.add_parser\("cache",', 'sub.add_parser("store",'),
    ("finelogic/book/cli.py", r'"cache": _cache\b', '"store": _store'),
    ("finelogic/book/cli.py", r"\bdef _cache\(", "def _store("),
    ("finelogic/book/cli.py", r"``list``, ``study``, ``cache``,", "``list``, ``study``, ``store``,"),
    ("finelogic/book/report.py", r"from the cache\)", "from the store)"),
    ("tests/test_runs_base.py", r"max_new_tokenz: unknown setting; ", "max_new_tokenz: unknown key; "),
    ("tests/test_store.py", r'main\(\["cache"\]\)', 'main(["store"])'),
    ("tests/test_architecture.py", r'"settings": 0\b', '"typed_config": 0'),
)


def files() -> list[Path]:
    found = {p for pattern in GLOBS for p in ROOT.glob(pattern) if p.is_file()}
    return sorted(p for p in found if p.name not in SKIP and "generated" not in p.relative_to(ROOT).parts)


def move(check: bool) -> list[str]:
    moved = []
    for old, new in MOVES:
        if (ROOT / old).exists() and not (ROOT / new).exists():
            moved.append(f"{old} -> {new}")
            if not check:
                subprocess.run(["git", "mv", old, new], cwd=ROOT, check=True)
    return moved


def _sub(pattern: str, replacement: str, text: str) -> tuple[str, int]:
    """``re.subn``, leaving alone the lines marked ``rename: keep`` (an old name kept on purpose: the error
    that names its new one, and its test); in a file with such a line, rules apply line by line."""
    if KEEP not in text:
        return re.subn(pattern, replacement, text)
    lines, total = text.splitlines(keepends=True), 0
    for i, line in enumerate(lines):
        if KEEP not in line:
            lines[i], n = re.subn(pattern, replacement, line)
            total += n
    return "".join(lines), total


def main(argv: list[str]) -> int:
    check = "--check" in argv
    moved = move(check)
    counts: dict[str, int] = {}
    changed = []
    for path in files():
        relative = path.relative_to(ROOT).as_posix()
        text = path.read_text(encoding="utf-8")
        new = text
        rules = [(p, r) for p, r in EVERYWHERE] + [(p, r) for f, p, r in IN_FILE if f == relative]
        for pattern, replacement in rules:
            new, n = _sub(pattern, replacement, new)
            if n:
                key = f"{pattern} -> {replacement}" + ("" if (pattern, replacement) in EVERYWHERE else f"  [{relative}]")
                counts[key] = counts.get(key, 0) + n
        if new != text:
            changed.append(relative)
            if not check:
                path.write_text(new, encoding="utf-8")
    for line in moved:
        print("moved", line)
    for key, n in counts.items():
        print(f"{n:5d}  {key}")
    print(f"{len(changed)} files {'would change' if check else 'changed'}")
    return 1 if check and (changed or moved) else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
