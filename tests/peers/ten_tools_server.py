# An MCP server on the official Python SDK with ten tools described the way real servers
# describe theirs (a paragraph each, a description on every parameter): the small-window
# tests offer it beside the built-in tools.
from mcp.server.mcpserver import MCPServer
from pydantic import Field
from typing import Annotated

app = MCPServer("ten")

NOTE = (" Results are returned as plain text, one record per line, newest first. The call is"
        " read-only and safe to repeat; it never changes the tracker. Use it before asking the"
        " user for information the tracker already holds.")


def param(text):
    return Field(description=text)


for i, subject in enumerate(["issues", "pull requests", "releases", "milestones", "labels",
                             "comments", "reviewers", "branches", "workflows", "deployments"]):
    def make(subject=subject):
        def tool(query: Annotated[str, param(f"Words to look for in the {subject}' titles and bodies; an empty query lists the most recent ones.")],
                 limit: Annotated[int, param("How many records to return at most, from 1 to 100.")] = 10,
                 state: Annotated[str, param("Which records: open, closed or all.")] = "open") -> str:
            return f"{subject}: nothing matches {query!r} ({state}, {limit})"
        return tool
    app.tool(name=f"search_{subject.replace(' ', '_')}",
             description=f"Search the project's {subject} in the tracker by words, state and"
                         f" recency." + NOTE)(make())

app.run()
