"""The webapp: results database, REST API, MaDDash JSON and the dashboard (Django + DRF).

A package like the orchestrator: `webapp.tpcbench_web` (settings, URLs, WSGI),
`webapp.results` (models, ingest, reads, API), `webapp.dashboard` (pages and plots)."""
