"""WSGI entry point (gunicorn webapp.tpcbench_web.wsgi)."""

import gc
import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "webapp.tpcbench_web.settings")

application = get_wsgi_application()

# What start-up loaded lives as long as the process: keep it out of the garbage collector's
# full passes, which otherwise walk all of it in the middle of a request that allocates a
# lot (a grid is thousands of objects) and add tens of milliseconds to that request.
gc.collect()
gc.freeze()
