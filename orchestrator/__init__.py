"""tpc-bench orchestrator: discovery, transfer tools, measurements, campaigns, lab, CLI."""
