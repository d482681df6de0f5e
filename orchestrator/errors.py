"""Errors that reach the user as one line saying what to do."""


class UserError(Exception):
    """A problem the user can fix; the CLI prints it as `tpcbench: error: <message>`."""
