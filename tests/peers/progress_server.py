# An MCP server on the official Python SDK with two slow tools: one reports progress while
# it works, the other is silent. The MCP progress test starts it with a short call timeout.
import asyncio
from mcp.server.mcpserver import MCPServer, Context
app = MCPServer("progress")

@app.tool(description="Works for about 2.4 s, reporting progress every 0.3 s.")
async def slow_with_progress(ctx: Context) -> str:
    for i in range(8):
        await ctx.report_progress(i, 8)
        await asyncio.sleep(0.3)
    return "done with progress"

@app.tool(description="Works for about 2.4 s and says nothing meanwhile.")
async def slow_silent() -> str:
    await asyncio.sleep(2.4)
    return "done silently"

app.run()
