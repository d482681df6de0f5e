#!/usr/bin/env python3
"""Django's command-line utility for the tpc-bench web app."""

import os
import sys


def main() -> None:
    # `webapp` is a package of the installed project (pip install -e .; the image sets
    # PYTHONPATH), so nothing is added to sys.path here.
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "webapp.tpcbench_web.settings")
    from django.core.management import execute_from_command_line

    execute_from_command_line(sys.argv)


if __name__ == "__main__":
    main()
