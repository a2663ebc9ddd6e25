"""The agent's one tool: a fixed table, so that every run sends the same
conversation."""

TOOLS = [{
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "The current weather in a city.",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string"}},
            "required": ["city"],
        },
    },
}]


def get_weather(city):
    return "18°C and sunny" if city == "Paris" else f"no weather known for {city}"
