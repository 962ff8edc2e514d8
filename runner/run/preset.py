"""`--preset NAME` (AGENT_RUN_PRESET): settings for a kind of model, named once. `small`, for a small model served
locally (llama.cpp, Ollama, vLLM; docs/providers.md): the tools read, list, grep, edit and bash (unless --tools
names others), a short "act, don't describe" rule in the runner's contract (runner/workspace/prompt.py ACT_RULE), and
the task's `check:` command shown in the task, so the model knows what its work is judged by, the files the task
names read for the model before its first request (runner/run/preload.py), and 4 non-answer nudges
(--answer-nudges) instead of 2. Measured on a 1.5B
model (issue 44): fewer tools, the rule and the check in the task solved 1 of 6 chores where the defaults solved none.

Like --tools, it shapes the sealed prompt (the tools array, the system prompt, the task message): resume and fork
keep the recorded ones and refuse it."""

from __future__ import annotations

from dataclasses import dataclass

from runner.run.options import RunOptions
from runner.workspace.prompt import ACT_RULE


@dataclass(frozen=True)
class Preset:
    tools: str  # --tools LIST, unless --tools is given
    rule: str  # added to the runner's contract
    show_check: bool  # the task's check: command is named in the task message
    preload: bool = False  # the files the task names are read for the model first (runner/run/preload.py)
    settings: tuple[tuple[str, int], ...] = ()  # defaults beneath the policy's own (a flag, the environment: above)


# A small model needs telling more often: against the 1.5B model, the default 2 non-answer nudges were spent before
# its second file's code block came (bench/bench_solve.py version_bump), so the preset allows 4.
PRESETS = {"small": Preset(tools="read,list,grep,edit,bash", rule=ACT_RULE, show_check=True, preload=True,
                           settings=(("answer_nudges", 4),))}


def preset_of(opts: RunOptions) -> Preset | None:
    return PRESETS[opts.preset] if opts.preset else None


def tools(opts: RunOptions) -> str | None:
    """The run's --tools LIST: the one given, else the preset's, else None (every tool)."""
    preset = preset_of(opts)
    return opts.tools if opts.tools is not None or preset is None else preset.tools


def rule(opts: RunOptions) -> str | None:
    preset = preset_of(opts)
    return preset.rule if preset else None


def settings(opts: RunOptions) -> dict[str, int]:
    """The preset's setting defaults: the layer beneath the policy's values (a flag, the environment, the policy and
    the task's front matter set them as for any default)."""
    preset = preset_of(opts)
    return dict(preset.settings) if preset else {}


def preloads(opts: RunOptions) -> bool:
    preset = preset_of(opts)
    return preset is not None and preset.preload


def task_message(text: str, check: str | None, opts: RunOptions) -> str:
    """The task as the model reads it: its text, and under a preset that shows it, the check that judges the work."""
    preset = preset_of(opts)
    if not (preset and preset.show_check and check):
        return text
    return (f"{text.rstrip()}\n\nWhen you answer, the runner runs `{check}` to check your work: the task is done only "
            "when it passes.\n")
