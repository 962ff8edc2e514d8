"""A non-answer is not an answer: deterministic text rules over a final reply (one without tool calls), and the guard
that sends such a reply back, once per kind, at most --answer-nudges times a run. No model judges the model.

The rules (docs/guards.md lists them with examples):
- `quoted_call`: it writes a call of an offered tool as JSON that did not run (runner/model/text_calls.py): amid
  other text, or — once the run reads no call in text (a model that made a structured call) — anywhere. The model is
  shown its call as it would run: alone, or through `tool_calls`. Never for a call the model was shown (a tool
  message, the task, the system prompt: a quote is not offered back as a call);
- `claimed_change`: a sentence claims a change ("fixed", "updated", "bumped", "added", "renamed", …, not negated,
  not a plan) while no file changed in the run;
- `handed_over`: the reply hands the user the work ("you need to …", "you can run …", or a code block for a file
  that exists in the workspace) while `edit`, `write` or `bash` were offered;
- `announced`: its last sentence announces what the model will do ("I will …", "Let me …", "Next, I …");
- `text_calls`: it is call-shaped text that cannot be run (several calls written as text, say) — never an answer;
- `tool_error`: it is a tool's error echoed back (`{"error": {…}}`) — never an answer.

Sent back once per kind: a second reply of a kind already refused stands (the check decides), except the two that are
never an answer, which end the run (exit 1) as an unusable answer does (runner/engine/loop.py).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from runner.core.jsonutil import short
from runner.core.outcome import Failed
from runner.guards.blocks import edit_for, shows
from runner.model.text_calls import Heard, TextCall, Unusable, parse_text_call, quoted_call


@dataclass(frozen=True)
class Facts:
    """What the rules know besides the text: whether the run changed a file (asked only for a claim), whether a tool
    that changes files was offered, whether a workspace-relative path is a file, the offered tools' names, whether
    text may hold calls at all (--text-tool-calls off: such text is an answer), whether a call written alone as the
    reply's text would run now (`auto`, before any structured call), and what the tool messages showed the model."""

    changed: Callable[[], bool]
    can_change: bool
    exists: Callable[[str], bool]
    tools: tuple[str, ...] = ()
    text_calls: bool = True
    listening: Callable[[], bool] = lambda: False
    heard: Heard = field(default_factory=Heard)
    read: Callable[[str], str | None] = lambda _path: None  # a workspace file's text now (None: none, or too big)


@dataclass(frozen=True)
class Seen:
    kind: str
    what: str  # the words seen, as the model is told them
    call: str | None = None  # the call that would do what the reply handed over (JSON), shown with the nudge


@dataclass(frozen=True)
class Nudge:
    reason: str  # the kind
    message: str  # what the model is told


NEVER_ANSWERS = {"text_calls": "call-shaped text that could not be run", "tool_error": "a tool's error, echoed"}

_FENCE = re.compile(r"^[ \t]*```([^\n`]*)\n(.*?)(?:\n[ \t]*```|\Z)", re.S | re.M)
_INLINE = re.compile(r"`[^`\n]*`")
_SENTENCES = re.compile(r"(?<=[.!?])\s+|\n+")
_VERBS = (r"(fixed|updated|bumped|added|renamed|changed|modified|replaced|removed|deleted|created|wrote|written|"
          r"implemented|corrected|applied|edited|refactored|moved|patched|inserted|resolved)")
# A change said as done: the sentence starts with it ("Fixed: …", "I've renamed …"), a person did it ("I updated"),
# or it is said of a thing ("has been bumped", "is now fixed") — not a word used as an adjective ("the removed module").
_CHANGED = re.compile(rf"^\W*(?:(?:i|we)(?:'ve| have)?\s+)?(?:\w+ly\s+)?{_VERBS}\b|"
                      rf"\b(?:i|we)(?:'ve| have)?\s+(?:\w+ly\s+|also\s+|now\s+)*{_VERBS}\b|"
                      rf"\b(?:has|have|had|was|were|is|are)\s+(?:now\s+|been\s+|also\s+|\w+ly\s+)*{_VERBS}\b", re.I)
_NOT_DONE = re.compile(r"\b(not|no|never|nothing|none|without|already|cannot|unable|if|should|would|could|will|"
                       r"need|needs|must|can|may|might|\w+n't)\b", re.I)
_HANDED = re.compile(r"\byou(?:'ll| will)? (?:need to|have to|must|can run|should run|could run|can now run)\b",
                     re.I)
_ANNOUNCED = re.compile(r"^(?:(?:now|next|first|then|so|ok|okay|alright|great)[,:]?\s+)*(?:i will|i'll|i am going to|"
                        r"i'm going to|i shall|let me|let's|i need to|next,? i)\b(?! know\b)", re.I)
_COMMENT = re.compile(r"\s*(?:#|//|/\*|<!--|--|;)")
# Starts only where a path could (no path character before it): from every position, `[\w.\-/]*` would re-scan the
# rest of a long word, quadratic in a 2 MB answer (test_a_5mb_streamed_answer_is_assembled: 10 minutes).
_PATH = re.compile(r"(?<![\w.\-/])[\w.\-/]*\w\.\w{1,10}\b")


def seen_in(text: str, facts: Facts) -> list[Seen]:
    """Every rule the reply breaks, in the order above."""
    prose = _INLINE.sub("`…`", _FENCE.sub("", _plain(text)))
    out: list[Seen] = []
    if facts.text_calls and (quoted := _quoted(text, facts.tools, facts.heard, facts.listening())) is not None:
        out.append(Seen("quoted_call", quoted))
    if (claim := _claim(prose)) is not None and not facts.changed():
        out.append(Seen("claimed_change", claim))
    if facts.can_change and (handed := _handed(text, prose, facts)) is not None:
        out.append(Seen("handed_over", *handed))
    if (announced := _announced(prose)) is not None:
        out.append(Seen("announced", announced))
    if facts.text_calls and isinstance(found := parse_text_call(text, facts.tools), Unusable):
        out.append(Seen("text_calls", found.what))
    if _tool_error(text):
        out.append(Seen("tool_error", short(text.strip(), 80)))
    return out


# The call shown back whole up to this size; a longer one is shown by its argument names (a cut JSON is no call).
_SHOWN_CALL = 600


def _quoted(text: str, tools: tuple[str, ...], heard: Heard, listening: bool) -> str | None:
    """The first call of an offered tool the reply writes as text and that did not run, as JSON; None when there is
    none. While calls in text are read (`listening`), a reply that is the call alone ran: only a call amid other text
    counts; once they are not (a model that made a structured call), any."""
    found = quoted_call(text, tools, heard)
    if found is None or (listening and isinstance(parse_text_call(text, tools, narrow=True), TextCall)):
        return None
    name, arguments = found
    whole = json.dumps({"name": name, "arguments": arguments}, ensure_ascii=False)
    if len(whole) <= _SHOWN_CALL:
        return whole
    return json.dumps({"name": name, "arguments": {k: "…" for k in arguments}}, ensure_ascii=False)


def _plain(text: str) -> str:
    return text.replace("\u2019", "'")


def _claim(prose: str) -> str | None:
    for sentence in _SENTENCES.split(prose):
        if _CHANGED.search(sentence.strip()) and not _NOT_DONE.search(sentence) and not sentence.rstrip().endswith("?"):
            return short(sentence.strip(), 80)
    return None


_CANDIDATES = 5  # files a code block is tried against for its edit
# A larger block is no edit shown back: edit_for's diff is file size times block size, on every answer.
_MAX_BLOCK = 64 * 1024


def _handed(text: str, prose: str, facts: Facts) -> tuple[str, str | None] | None:
    """(what was seen, the `edit` call that makes a code block's change, or None) when the reply hands over work: a
    code block for a file that exists — named beside it, or one the reply names anywhere whose lines most of the
    block is (runner/guards/blocks.py) — or a phrase that hands it over."""
    plain = _plain(text)
    anywhere = [rel for path in _PATH.findall(_FENCE.sub("", plain)) if facts.exists(rel := _relative(path))]
    first: str | None = None
    for block in _FENCE.finditer(plain):
        before = plain[:block.start()].rstrip().rsplit("\n", 1)[-1]
        top, _, rest = block.group(2).partition("\n")
        named = top if _COMMENT.match(top) else ""  # `# app.py` names the file; code that mentions one does not
        near = [rel for where in (block.group(1), named, before) for path in _PATH.findall(where)
                if facts.exists(rel := _relative(path))]
        if any((current := facts.read(rel)) is not None and shows(current, block.group(2) if not named else rest)
               for rel in list(dict.fromkeys(near + anywhere))[:_CANDIDATES]):
            continue  # the file as it is now: the reply shows what was done, it hands nothing over
        if near and first is None:
            first = f"a code block for `{near[0]}`"
        for rel in list(dict.fromkeys(near + anywhere))[:_CANDIDATES]:
            code = rest if named and rel in named else block.group(2)
            if (call := _edit_call(rel, code, facts)) is not None:
                return f"a code block for `{rel}`", call
    if first is not None:
        return first, None
    if (phrase := _HANDED.search(prose)) is not None:
        return f'"{phrase.group(0)} …"', None
    return None


def _relative(path: str) -> str:
    return path.strip("./") if path.startswith("./") else path


def _edit_call(path: str, code: str, facts: Facts) -> str | None:
    """The `edit` call that makes the change a code block for `path` shows (runner/guards/blocks.py), as JSON; None
    when there is none, `edit` is not offered, or the block is one a tool message showed the model (a file's code
    quoted is not offered back as a change)."""
    if "edit" not in facts.tools or len(code) > _MAX_BLOCK or facts.heard.showed(code):
        return None
    current = facts.read(path)
    change = edit_for(current, code) if current is not None else None
    if change is None:
        return None
    return json.dumps({"name": "edit", "arguments": {"path": path, "old_string": change[0],
                                                      "new_string": change[1]}}, ensure_ascii=False)


def _announced(prose: str) -> str | None:
    sentences = [s.strip() for s in _SENTENCES.split(prose.strip()) if s.strip()]
    if sentences and _ANNOUNCED.match(sentences[-1]):
        return short(sentences[-1], 80)
    return None


def _tool_error(text: str) -> bool:
    body = text.strip()
    fenced = _FENCE.fullmatch(body)
    try:
        value = json.loads(fenced.group(2) if fenced else body)
    except (ValueError, RecursionError):
        return False
    return isinstance(value, dict) and isinstance(value.get("error"), dict) and \
        bool({"type", "message"} & set(value["error"]))


def told(seen: Seen, listening: bool = False) -> str:
    """What the model is told for a refused reply (`listening`: a call written alone as the reply would run)."""
    match seen.kind:
        case "quoted_call" if listening:
            name = json.loads(seen.what)["name"]
            return (f"[agent-run: nothing was run: your reply writes a call of `{name}` inside other text, and a call "
                    "written as text runs only when it is the whole reply. To run it, reply with the call alone, "
                    "nothing before or after it, one call per reply (or call it through the tool_calls field):\n"
                    f"{seen.what}]")
        case "quoted_call":
            name = json.loads(seen.what)["name"]
            return (f"[agent-run: nothing was run: your reply writes a call of `{name}` as text, and this run reads "
                    "no call in text. To run it, reply with it as a tool call (the tool_calls field) and nothing "
                    f"else, one call per reply:\n{seen.what}]")
        case "claimed_change":
            return (f'[agent-run: your reply says "{seen.what}". No file changed in this run; make the change with '
                    "the tools, then answer.]")
        case "handed_over" if seen.call is not None:
            how = ("reply with this call alone, nothing before or after it (or make it through the tool_calls "
                   "field)" if listening else "reply with this tool call (the tool_calls field) and nothing else")
            return (f"[agent-run: your reply hands the work to the user ({seen.what}); nothing changed. Make the "
                    f"change yourself: {how}:\n{seen.call}]")
        case "handed_over":
            return (f"[agent-run: your reply hands the work to the user ({seen.what}). Do it yourself with the tools "
                    "(edit, write, bash), then answer.]")
        case "announced":
            return (f'[agent-run: your reply ends by announcing what you will do ("{seen.what}"), and nothing was '
                    "done. Do it now: call a tool.]")
        case "text_calls":
            return (f"[agent-run: your reply is tool calls written as text ({seen.what}). Call one tool at a time "
                    "through the tool_calls field of your reply.]")
    return ("[agent-run: your reply repeats a tool's error; it is not an answer. Read the error, fix the call and go "
            "on with a tool call.]")


@dataclass
class AnswerGuard:
    """The run's answer rules: each kind refused once — a kind that shows the model a call, once per call (a second
    file's edit is news) — at most `budget` refusals a run (0: none, today's behaviour).
    Called with a final answer: the nudge, or None when it stands; raises Failed for a reply that is never an answer
    and was refused before (or can no longer be)."""

    budget: int
    facts: Facts
    refused: set[str] = field(default_factory=set)

    def __call__(self, answer: str, /) -> Nudge | None:
        if self.budget <= 0 and not self.refused:
            return None
        seen = seen_in(answer, self.facts)
        fresh = [s for s in seen if _once(s) not in self.refused]
        if fresh and len(self.refused) < self.budget:
            self.refused.add(_once(fresh[0]))
            return Nudge(fresh[0].kind, told(fresh[0], self.facts.listening()))
        never = next((s for s in seen if s.kind in NEVER_ANSWERS), None)
        if never is not None:
            raise Failed(f"the model's final answer was {NEVER_ANSWERS[never.kind]} ({never.what}), again after "
                         "being told")
        return None


def _once(seen: Seen) -> str:
    """What is refused only once: the kind, and the call it shows the model, if any."""
    call = seen.call if seen.call is not None else seen.what if seen.kind == "quoted_call" else None
    return seen.kind if call is None else f"{seen.kind}\n{call}"


def workspace_files(root: Path) -> Callable[[str], bool]:
    """Whether a path the model named is a file inside the workspace (never outside it, whatever it names)."""
    base = root.resolve()

    def exists(name: str) -> bool:
        try:
            path = (base / name).resolve()
            return path.is_relative_to(base) and path.is_file()
        except (OSError, ValueError):
            return False

    return exists
