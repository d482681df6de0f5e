"""Writes (HackSoft's services: keyword-only, typed arguments), one module per subject:
measurements, campaigns, nodes, baselines and preliminary runs."""
