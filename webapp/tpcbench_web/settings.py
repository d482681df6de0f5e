"""Settings, read from the environment (twelve-factor, as cookiecutter-django does).

DATABASE_URL            database (default: a SQLite file under var/, the demo's zero-setup choice)
DJANGO_DEBUG            "true" for local development (default false)
DJANGO_SECRET_KEY       required when DJANGO_DEBUG is false
DJANGO_ALLOWED_HOSTS    comma-separated (default localhost,127.0.0.1,[::1])
TPCBENCH_ANONYMOUS_READS  "false" makes every read require authentication (default true)
TPCBENCH_OK_GBPS / TPCBENCH_WARNING_GBPS  default grid thresholds (30 / 10) for nodes whose
                        link capacity is unknown
TPCBENCH_OK_FRACTION / TPCBENCH_WARNING_FRACTION  default thresholds as fractions of a pair's
                        (smaller) link capacity when the orchestrator reports it (0.3 / 0.1)
TPCBENCH_ALERT_*, DJANGO_EMAIL_*, TPCBENCH_METRICS_PER_PAIR  alerts, their notifications and
                        the metrics (docs/alerts.md)

The variables are read by env_bool, env_float and env_list below, not django-environ:
measured on 0.14.0, its Env reads an unknown word as false (DJANGO_DEBUG=ture would start in
production mode), a number with every other character dropped ("1e3" is 13.0), a list with
its items' spaces kept, and a value beginning with "$" as another variable's name (a secret
key may begin with "$"). An Env as strict as these three functions took 52 lines overriding
its get_value and parse_value, against their 25.
"""

import os
from pathlib import Path

import dj_database_url
from django.core.exceptions import ImproperlyConfigured

WEBAPP_DIR = Path(__file__).resolve().parent.parent
REPO_DIR = WEBAPP_DIR.parent


def env_bool(name: str, default: bool) -> bool:
    value = os.environ.get(name)
    if value is None or value == "":
        return default
    if value.lower() in {"1", "true", "yes", "on"}:
        return True
    if value.lower() in {"0", "false", "no", "off"}:
        return False
    raise ImproperlyConfigured(f"{name}={value!r}: expected true or false")


def env_float(name: str, default: float) -> float:
    value = os.environ.get(name)
    try:
        return float(value) if value else default
    except ValueError as exc:
        raise ImproperlyConfigured(f"{name}={value!r}: expected a number") from exc


def env_int(name: str, default: int) -> int:
    value = os.environ.get(name)
    try:
        return int(value) if value else default
    except ValueError as exc:
        raise ImproperlyConfigured(f"{name}={value!r}: expected a whole number") from exc


def env_list(name: str, default: str) -> list[str]:
    """Comma-separated, each item stripped, empty ones dropped."""
    return [item.strip() for item in os.environ.get(name, default).split(",") if item.strip()]


DEBUG = env_bool("DJANGO_DEBUG", False)
SECRET_KEY = os.environ.get("DJANGO_SECRET_KEY", "")
if not SECRET_KEY:
    if not DEBUG:
        # Fail at start-up, not at the first signed cookie, when production forgot its secret.
        raise ImproperlyConfigured(
            "DJANGO_SECRET_KEY must be set when DJANGO_DEBUG is false "
            "(for local development set DJANGO_DEBUG=true)"
        )
    SECRET_KEY = "insecure-development-key-only-used-with-DJANGO_DEBUG-true"

ALLOWED_HOSTS = env_list("DJANGO_ALLOWED_HOSTS", "localhost,127.0.0.1,[::1]")
CSRF_TRUSTED_ORIGINS = env_list("DJANGO_CSRF_TRUSTED_ORIGINS", "")

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "whitenoise.runserver_nostatic",
    "django.contrib.staticfiles",
    "rest_framework",
    "rest_framework.authtoken",
    "django_filters",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "webapp.results",
    "webapp.dashboard",
]

MIDDLEWARE = [
    "webapp.tpcbench_web.health.HealthCheckMiddleware",  # first: no host check, no auth
    "django.middleware.security.SecurityMiddleware",
    "webapp.tpcbench_web.errors.NulPathMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
]

ROOT_URLCONF = "webapp.tpcbench_web.urls"
WSGI_APPLICATION = "webapp.tpcbench_web.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "webapp.dashboard.sites.sites_navigation",
            ],
        },
    },
]

DEFAULT_SQLITE = REPO_DIR / "var" / "webapp.sqlite3"
DATABASES = {
    "default": dj_database_url.config(
        env="DATABASE_URL", default=f"sqlite:///{DEFAULT_SQLITE}", conn_max_age=60
    )
}
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    DEFAULT_SQLITE.parent.mkdir(parents=True, exist_ok=True)

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
# The demo's SQLite lacks covering indexes and NULLS NOT DISTINCT; PostgreSQL has both.
SILENCED_SYSTEM_CHECKS = ["models.W040", "models.W047"]

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATIC_ROOT = Path(os.environ.get("DJANGO_STATIC_ROOT", REPO_DIR / "var" / "static"))
STATICFILES_FINDERS = [
    "django.contrib.staticfiles.finders.FileSystemFinder",
    "django.contrib.staticfiles.finders.AppDirectoriesFinder",
    "webapp.dashboard.finders.PlotlyFinder",  # plotly.min.js from the pinned plotly wheel
]
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {
        "BACKEND": (
            "django.contrib.staticfiles.storage.StaticFilesStorage"
            if DEBUG
            else "whitenoise.storage.CompressedManifestStaticFilesStorage"
        )
    },
}

TPCBENCH_ANONYMOUS_READS = env_bool("TPCBENCH_ANONYMOUS_READS", True)
TPCBENCH_DEFAULT_OK_GBPS = env_float("TPCBENCH_OK_GBPS", 30.0)
TPCBENCH_DEFAULT_WARNING_GBPS = env_float("TPCBENCH_WARNING_GBPS", 10.0)
# The paper's 30 and 10 Gbps on its 100 Gbps links, as fractions of any link.
TPCBENCH_OK_LINK_FRACTION = env_float("TPCBENCH_OK_FRACTION", 0.3)
TPCBENCH_WARNING_LINK_FRACTION = env_float("TPCBENCH_WARNING_FRACTION", 0.1)

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "rest_framework.authentication.TokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": [
        "webapp.results.api.permissions.ReadAnonymousWriteWithPermission"
    ],
    # JSON only: measurements nest their transfers, which form encodings cannot carry.
    "DEFAULT_PARSER_CLASSES": ["rest_framework.parsers.JSONParser"],
    "DEFAULT_FILTER_BACKENDS": ["django_filters.rest_framework.DjangoFilterBackend"],
    "DEFAULT_PAGINATION_CLASS": "webapp.results.api.pagination.CheckedLimitOffsetPagination",
    "PAGE_SIZE": 100,
    "DEFAULT_SCHEMA_CLASS": "webapp.results.api.schema.AutoSchema",
    "DEFAULT_RENDERER_CLASSES": [
        "rest_framework.renderers.JSONRenderer",
        "rest_framework.renderers.BrowsableAPIRenderer",
    ],
    "EXCEPTION_HANDLER": "rest_framework.views.exception_handler",
    "DEFAULT_CONTENT_NEGOTIATION_CLASS": (
        "webapp.results.api.negotiation.FormatParameterNegotiation"
    ),
}

SPECTACULAR_SETTINGS = {
    "TITLE": "tpc-bench API",
    "DESCRIPTION": "Third-Party-Copy benchmark results: ingest, queries, MaDDash-compatible grids.",
    "VERSION": "1.0.0",
    "SERVE_INCLUDE_SCHEMA": False,
    # Swagger UI and Redoc assets come from drf-spectacular-sidecar: no CDN, works offline.
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    "COMPONENT_SPLIT_REQUEST": True,
    # Two fields named "state": the campaigns' keeps the name it had before the alerts'.
    "ENUM_NAME_OVERRIDES": {
        "StateEnum": "webapp.results.choices.CampaignState",
        "AlertStateEnum": "webapp.results.models.alerts.AlertState",
    },
    "POSTPROCESSING_HOOKS": [
        "drf_spectacular.hooks.postprocess_schema_enums",
        "webapp.results.api.schema.complete_the_document",
    ],
}

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": os.environ.get("DJANGO_LOG_LEVEL", "INFO")},
}

# Alerts (docs/alerts.md): a check warns below FRACTION of its median over the DAYS before,
# with at least MIN_HISTORY measurements in them; a state changes after IN_A_ROW agreeing.
TPCBENCH_ALERT_MEDIAN_FRACTION = env_float("TPCBENCH_ALERT_MEDIAN_FRACTION", 0.7)
TPCBENCH_ALERT_MEDIAN_DAYS = env_float("TPCBENCH_ALERT_MEDIAN_DAYS", 20.0)
TPCBENCH_ALERT_IN_A_ROW = env_int("TPCBENCH_ALERT_IN_A_ROW", 2)
TPCBENCH_ALERT_MIN_HISTORY = env_int("TPCBENCH_ALERT_MIN_HISTORY", 3)
# Notifications of state changes (none when unset): a webhook's URL (a JSON POST with
# "text") and mail recipients (comma-separated; sent through Django's EMAIL_* settings).
TPCBENCH_ALERT_WEBHOOK_URL = os.environ.get("TPCBENCH_ALERT_WEBHOOK_URL", "")
TPCBENCH_ALERT_WEBHOOK_TIMEOUT = env_float("TPCBENCH_ALERT_WEBHOOK_TIMEOUT", 5.0)
TPCBENCH_ALERT_MAIL_TO = env_list("TPCBENCH_ALERT_MAIL_TO", "")
TPCBENCH_ALERT_MAIL_FROM = os.environ.get("TPCBENCH_ALERT_MAIL_FROM", "tpc-bench@localhost")
# Where the dashboard is (links in notifications), e.g. https://tpcbench.example.org
TPCBENCH_PUBLIC_URL = os.environ.get("TPCBENCH_PUBLIC_URL", "").rstrip("/")
EMAIL_BACKEND = os.environ.get(
    "DJANGO_EMAIL_BACKEND", "django.core.mail.backends.smtp.EmailBackend"
)
EMAIL_HOST = os.environ.get("DJANGO_EMAIL_HOST", "localhost")
EMAIL_PORT = env_int("DJANGO_EMAIL_PORT", 25)
EMAIL_TIMEOUT = env_int("DJANGO_EMAIL_TIMEOUT", 10)
# /metrics: per-pair series (one per check) besides the per-node ones; off for big meshes.
TPCBENCH_METRICS_PER_PAIR = env_bool("TPCBENCH_METRICS_PER_PAIR", True)
