# An MCP server on the official Python SDK with a tool that requires the MCP tasks extension
# (io.modelcontextprotocol/tasks) of its client, and one that does not: a client that does not
# declare the extension gets the SDK's "missing required client capability" error.
from mcp.server.mcpserver import Context, MCPServer, require_client_extension

app = MCPServer("tasks")


@app.tool(description="Index the repository (a long job, run as an MCP task).")
def index_repository(path: str, ctx: Context) -> str:
    require_client_extension(ctx.request_context, "io.modelcontextprotocol/tasks")
    return f"indexed {path}"


@app.tool(description="Answer pong.")
def ping() -> str:
    return "pong"


app.run()
