"""A two-step tool loop against an OpenAI-compatible endpoint."""
