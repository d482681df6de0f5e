"""Reads (HackSoft's selectors), one module per subject: campaigns, which measurements a
read takes, the aggregates, a pair's history, baselines and preliminary runs. The grids'
reads are results.grid.queries."""
