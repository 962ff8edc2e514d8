"""The option table (runner/run/option_table.py) agrees with what each row names: the `Settings` and
`RunOptions` fields, the policy keys, the protected inputs, and the GitHub Action's inputs and `args` guard."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

from ruamel.yaml import YAML

from runner.engine.settings import Settings, policy_layer
from runner.run.option_table import ACTION_OWN, OPTIONS, Goes, Rerun, action_owned
from runner.run.options import RunOptions

ROOT = Path(__file__).resolve().parents[2]
ACTION = YAML(typ="safe", pure=True).load((ROOT / "action.yml").read_text(encoding="utf-8"))


def test_each_flag_is_declared_once_and_names_a_field_where_it_goes():
    assert len({o.flag for o in OPTIONS}) == len(OPTIONS) == len({o.name for o in OPTIONS})
    run_fields = {f.name for f in dataclasses.fields(RunOptions)}
    for option in OPTIONS:
        if option.goes is Goes.SETTINGS:
            assert option.name in Settings.model_fields, option.flag
            assert option.env == f"AGENT_RUN_{option.name.upper()}", option.flag  # Settings' env_prefix
        elif option.goes is Goes.RUN:
            assert option.name in run_fields, option.flag
        assert option.rerun is not Rerun.SETTING or option.goes is Goes.SETTINGS, option.flag


def test_a_policy_key_sets_the_same_setting():
    # A run value's key is read where the run reads it (sandbox.mode: runner/policy/sandbox_config.py).
    for option in (o for o in OPTIONS if o.policy and o.goes is Goes.SETTINGS):
        section, key = option.policy.split(".")
        assert policy_layer({section: {key: 7}}) == {option.name: 7}, option.flag


def test_protected_inputs_have_distinct_places():
    places = sorted(o.protect for o in OPTIONS if o.protect is not None)
    assert places == list(range(1, len(places) + 1))


def _guard() -> tuple[list[str], list[str]]:
    """The INPUTS and FIXED tuples of the run step's args guard (its Python, inside action.yml)."""
    script = next(s for s in ACTION["runs"]["steps"] if s.get("id") == "run")["run"]
    found = {name: re.findall(r'"(--[a-z-]+)"', body)
             for name, body in re.findall(r"^ *(INPUTS|FIXED) = \(([^)]*)\)", script, re.M)}
    return found["INPUTS"], found["FIXED"]


def test_the_actions_args_guard_refuses_exactly_the_flags_the_table_gives_the_action():
    assert _guard() == action_owned()


def test_every_input_the_table_names_is_the_actions_and_passed_as_its_flag():
    step = next(s for s in ACTION["runs"]["steps"] if s.get("id") == "run")
    for option in (o for o in OPTIONS if o.action not in (None, ACTION_OWN)):
        assert option.action in ACTION["inputs"], option.flag
        variable = "INPUT_" + option.action.upper().replace("-", "_")
        assert step["env"][variable].endswith(f"inputs.{option.action} }}}}"), option.flag
        if option.value.kind == "switch":  # the flag alone, when the input is "true"
            assert re.search(rf'if \[ "\${variable}" = true \]; then \w+\+=\({option.flag}\)', step["run"]), option.flag
        else:
            assert re.search(rf'{option.flag} "\$(\{{)?({variable}|mcp)', step["run"]), option.flag


def test_the_owned_flags_are_listed_where_the_action_and_docs_ci_md_describe_args():
    described = " ".join(ACTION["inputs"]["args"]["description"].split())
    ci = (ROOT / "docs" / "ci.md").read_text(encoding="utf-8")
    for flags in action_owned():
        assert f": {' '.join(flags)} (" in described or f"and {' '.join(flags)} (" in described
        assert f"`{' '.join(flags)}`" in ci
