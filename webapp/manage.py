#!/usr/bin/env python3
"""Django's command-line utility for the tpc-bench web app."""

import os
import sys


def main() -> None:
    # webapp/ is not a package: its apps (tpcbench_web, results, dashboard) live at top level.
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tpcbench_web.settings")
    from django.core.management import execute_from_command_line

    execute_from_command_line(sys.argv)


if __name__ == "__main__":
    main()
