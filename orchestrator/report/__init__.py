"""Reporting: spool every result durably, then send it to the webapp until it has it."""
