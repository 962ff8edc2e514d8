"""The click options of every command that takes run options, built from their one declaration
(runner/run/option_table.py), and the argv a batch passes on to each task."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Sequence
from typing import Any, TypeVar

import click

from runner.run.option_table import OPTIONS, Option, Value, row

F = TypeVar("F", bound=Callable[..., Any])


def _type(value: Value) -> click.ParamType | type | None:
    if value.kind == "int":
        low, high = (None if b is None else int(b) for b in (value.low, value.high))
        return int if low is None and high is None else click.IntRange(low, high)
    if value.kind == "float":
        return click.FloatRange(value.low, value.high, min_open=value.low_open)
    if value.kind == "choice":
        return click.Choice(list(value.choices))
    return None


def click_option(option: Option, command: str = "run", *, hidden: bool = False) -> Callable[[F], F]:
    """`option` as `command` shows it."""
    decls = [*([option.short] if option.short else []),
             f"{option.flag}/{option.off}" if option.off else option.flag, option.name]
    kw: dict[str, Any] = {"help": option.help_on(command)}
    if option.value.kind == "switch":
        kw["is_flag"] = True
    elif option.value.kind == "bool":
        kw["default"] = None  # not given: the layers below decide
    elif (kind := _type(option.value)) is not None:
        kw["type"] = kind
    if option.metavar:
        kw["metavar"] = option.metavar
    if option.many:
        kw["multiple"] = True
    if hidden:
        kw["hidden"] = True
    return click.option(*decls, **kw)


def options(rows: Iterable[Option], command: str, hide: Callable[[Option], bool] = lambda _: False
            ) -> Callable[[F], F]:
    """A decorator adding `rows` to a click command, listed in their order."""
    made = [click_option(o, command, hidden=hide(o)) for o in rows]

    def apply(function: F) -> F:
        for option in reversed(made):
            function = option(function)
        return function

    return apply


def named(command: str, *flags: str, table: Sequence[Option] = OPTIONS) -> Callable[[F], F]:
    """The rows of these flags, as `command` shows them, in this order."""
    by_flag = {o.flag: o for o in table}
    return options((by_flag[f] for f in flags), command)


def forwarded(values: dict[str, Any], table: Sequence[Option] = OPTIONS) -> list[str]:
    """The words a batch passes on to every task's `run`: each option batch takes that was given, the
    single-valued ones first, then each value of the repeatable ones, each group in the table's order."""
    words: list[str] = []
    for option in (o for o in table if o.batch and not o.many):
        if option.value.kind == "switch":
            words += [option.flag] if values.get(option.name) else []
        elif values.get(option.name) is not None:
            words += [option.flag, str(values[option.name])]
    for option in (o for o in table if o.batch and o.many):
        for value in values.get(option.name) or ():
            words += [option.flag, value]
    return words


def or_env(option: Option, value: Any) -> Any:
    """A flag's value, or (for a row the command reads itself, `cli_env`) its environment variable's when not given."""
    return os.environ.get(option.env) if value is None and option.cli_env and option.env else value


def output_format(given: str | None) -> str:
    """The output format in effect: the flag, else its environment variable, else its default."""
    option = row("--output-format")
    return str(given or os.environ.get(option.env or "") or option.default)
