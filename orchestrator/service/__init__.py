"""The orchestrator as a service: settings from the environment, cron and run-now, /metrics."""
