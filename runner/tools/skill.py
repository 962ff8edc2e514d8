"""skill: load a skill's instructions (its SKILL.md body) into the conversation, as this tool's result.

Only the index of skills is in the system prompt; the body arrives here when the model asks, so the
prompt prefix never changes. Decided like a read of the SKILL.md. Loading a skill makes its
`allowed-tools` (if any) the restriction on later calls, until the next `skill` call (runner/workspace/skills.py).
"""

from __future__ import annotations

from typing import Any

from runner.policy.model import Target
from runner.policy.targets import path_target
from runner.tools.base import Tool, ToolContext, ToolError, ToolOutput
from runner.workspace.skills import Skill

MAX_FILES_LISTED = 30


class SkillTool(Tool):
    name = "skill"
    domain = "read"
    risk = "low"
    context_class = "whole"
    offered = "added"  # when the run has skills
    narrows = True  # what it loads restricts the calls after it
    concurrent = "read"  # changes neither the workspace nor the world: may run beside others
    description = ("Load a skill (a procedure for a kind of task, listed in the system prompt) by name: returns "
                   "its instructions and the files in its folder. Follow them; read those files with `read`.")

    def __init__(self, skills: list[Skill]) -> None:
        self.skills = {s.name: s for s in skills}
        self.schema = {"type": "object", "additionalProperties": False, "required": ["name"],  # type: ignore[misc]
                       "properties": {"name": {"type": "string", "enum": sorted(self.skills)}}}

    def targets(self, args: dict[str, Any], ctx: ToolContext) -> list[Target]:
        skill = self.skills.get(str(args.get("name")))
        if skill is None:
            return []
        return [Target("read", path_target(ctx.workspace, skill.directory / "SKILL.md"))]

    def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolOutput:
        skill = self.skills.get(str(args["name"]))
        if skill is None:
            raise ToolError("InvalidArguments", f"no skill named {args['name']!r}; known: {', '.join(self.skills)}")
        ctx.state.skill.set(skill)  # the calling agent's restriction (AgentState, runner/tools/base.py)
        files = sorted(p.relative_to(skill.directory).as_posix() for p in skill.directory.rglob("*")
                       if p.is_file() and p.name != "SKILL.md")[:MAX_FILES_LISTED]
        limit = ("" if skill.allowed is None else
                 "\nWhile you follow it, only these tools may be called: "
                 + ", ".join(n + (f"({p})" if p else "") for n, p in skill.allowed) + " (and `skill`).\n")
        listing = "".join(f"\n- {f}" for f in files)
        where = path_target(ctx.workspace, skill.directory).split(":", 1)[-1]
        return ToolOutput(f"# Skill: {skill.name}\nFolder: {where}\n{limit}\n{skill.body}\n"
                          + (f"\nFiles in its folder:{listing}\n" if files else ""),
                          {"skill": skill.name, "files": len(files)})
