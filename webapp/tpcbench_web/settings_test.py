"""Settings for the test suite: the production settings on PostgreSQL, never SQLite.

TPCBENCH_TEST_DATABASE_URL overrides the server (default: the one scripts/ensure-postgres.sh makes).
"""

import os

os.environ.setdefault("DJANGO_SECRET_KEY", "test-suite-only-secret-key")
os.environ["DATABASE_URL"] = os.environ.get(
    "TPCBENCH_TEST_DATABASE_URL", "postgres://tpcbench:tpcbench@127.0.0.1:5432/tpcbench"
)

from webapp.tpcbench_web.settings import *  # noqa: F403

# Plain file storage: tests render pages without running collectstatic first.
STORAGES["staticfiles"] = {  # noqa: F405
    "BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"
}
# Cheap hashing: user fixtures are created in many tests.
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
# Serve app static files straight from the finders: no collectstatic in the test suite.
WHITENOISE_AUTOREFRESH = True
WHITENOISE_USE_FINDERS = True
