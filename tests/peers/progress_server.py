# An MCP server on the official Python SDK with two slow tools: one reports progress while
# it works (with a message that tries to clear the screen, which must reach a terminal as
# text), the other is silent. The MCP progress tests start it with a short call timeout.
import asyncio
from mcp.server.mcpserver import MCPServer, Context
app = MCPServer("progress")

@app.tool(description="Works for about 2.4 s, reporting progress every 0.3 s.")
async def slow_with_progress(ctx: Context) -> str:
    for i in range(8):
        await ctx.report_progress(i, 8, f"chunk {i}\x1b[2J")
        await asyncio.sleep(0.3)
    return "done with progress"

@app.tool(description="Works for about 2.4 s and says nothing meanwhile.")
async def slow_silent() -> str:
    await asyncio.sleep(2.4)
    return "done silently"

app.run()
