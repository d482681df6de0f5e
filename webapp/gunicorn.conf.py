"""gunicorn settings for the webapp image (gunicorn reads this file from its working
directory, /app/webapp). Each can be changed through the environment:

TPCBENCH_WEB_BIND   address:port to listen on (default 0.0.0.0:8000)
WEB_CONCURRENCY     worker processes (default 2; gunicorn's own variable)
"""

import os

wsgi_app = "webapp.tpcbench_web.wsgi:application"
bind = os.environ.get("TPCBENCH_WEB_BIND", "0.0.0.0:8000")
workers = int(os.environ.get("WEB_CONCURRENCY", "2"))
accesslog = "-"
# Behind an Ingress or a Service the client address arrives in X-Forwarded-For.
forwarded_allow_ips = "*"
