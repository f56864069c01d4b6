# An MCP server on the official Python SDK whose one tool has a 100-character name (MCP
# allows 128; OpenAI and Anthropic take 64): the tool-name tests start it.
import sys
from mcp.server.mcpserver import MCPServer
app = MCPServer("long-names")
LONG = "fetch_the_current_weather_report_for_a_named_city_including_humidity_and_wind_and_pressure_readings_"
assert len(LONG) == 100, len(LONG)
@app.tool(name=LONG, description="Say which city.")
def weather(city: str) -> str:
    return f"weather in {city}: fine"
app.run()
