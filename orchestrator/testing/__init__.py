"""Real, local stand-ins for production infrastructure, used by tests and benchmarks."""
