"""The vocabularies of a measurement: protocols, authorizations, clients, outcomes, errors."""

from django.db import models


class Protocol(models.TextChoices):
    HTTPS = "https", "HTTPS (XRootD WebDAV COPY)"
    GRIDFTP = "gridftp", "GridFTP"
    ROOT = "root", "XRootD root:// TPC"


class Auth(models.TextChoices):
    """How the transfers of a measurement were authorized (orchestrator --auth)."""

    X509 = "x509", "X.509 client certificate"
    TOKEN = "token", "Bearer tokens (WLCG/SciTokens)"


class Client(models.TextChoices):
    """What drove the copies (orchestrator --client)."""

    NATIVE = "native", "The protocol's own tool"
    GFAL2 = "gfal2", "gfal2 (FTS's library)"


class Trigger(models.TextChoices):
    SCHEDULE = "schedule", "Scheduled"
    MANUAL = "manual", "Manual (run now)"
    CLI = "cli", "Command line"


class CampaignState(models.TextChoices):
    PENDING = "pending", "Pending"
    RUNNING = "running", "Running"
    FINISHED = "finished", "Finished"
    INTERRUPTED = "interrupted", "Interrupted"
    FAILED = "failed", "Failed"


class Outcome(models.TextChoices):
    SUCCESS = "success", "Success"
    FAILURE = "failure", "Failure"


class ErrorClass(models.TextChoices):
    CONNECT = "connect", "Connection"
    TLS = "tls", "TLS"
    AUTH = "auth", "Authentication/authorisation"
    NOT_FOUND = "not-found", "Not found"
    REMOTE_FAILURE = "remote-failure", "Remote failure"
    TIMEOUT = "timeout", "Timeout"
    KILLED = "killed", "Killed"


class PrelimKind(models.TextChoices):
    CONCURRENCY = "concurrency", "Concurrency sweep (Figure 3)"
    FILESIZE = "filesize", "File size sweep (Figure 4)"


class PrelimMethod(models.TextChoices):
    CP = "cp", "cp between memory-backed directories"
    HTTPS = "https", "HTTPS-TPC between two XRootD instances"
    GRIDFTP = "gridftp", "GridFTP-TPC between two GridFTP instances"
