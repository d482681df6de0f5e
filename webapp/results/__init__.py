"""Results: the measurement database, its ingest and query API, MaDDash-compatible grids."""
