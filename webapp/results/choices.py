"""The vocabularies of a measurement: protocols, authorizations, clients, checksums, outcomes,
errors; and the dimensions a page or an aggregate reads one value of at a time."""

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


class Checksum(models.TextChoices):
    """The checksum step each transfer ended with (orchestrator --checksum)."""

    NONE = "none", "None: the copy alone"
    ADLER32 = "adler32", "adler32 of source and destination compared, as FTS does"


class Scope(models.TextChoices):
    """What a measurement's ends are (orchestrator --scope): two hosts, or two sites (the
    copy addressed to a site's redirector, which sends it to one of its data servers)."""

    HOST = "host", "Host to host"
    SITE = "site", "Site to site, through the sites' redirectors"


class LookupLevel(models.TextChoices):
    """Where a redirector lookup found the file (docs/sites.md): the entry redirector was
    the file's own site's manager, or the lookup climbed to a regional or global one."""

    LOCAL = "local", "Local: the file's own site's redirector"
    REGIONAL = "regional", "Regional redirector"
    GLOBAL = "global", "Global redirector"


# What a redirector lookup may be made with: the protocols whose servers redirect.
LOOKUP_PROTOCOLS = (Protocol.HTTPS, Protocol.ROOT)


# A site's name (docs/sites.md): a short word, as the lab and the chart name sites.
SITE_NAME_PATTERN = r"^[a-z][a-z0-9]{0,7}$"


# Besides the protocol, what a measurement is of: the grids, plots and aggregates read one
# value of each at a time, these defaults unless asked (so figures without them stay as
# they were), in this order in labels and query strings.
DIMENSION_DEFAULTS: dict[str, str] = {
    "auth": Auth.X509.value,
    "client": Client.NATIVE.value,
    "checksum": Checksum.NONE.value,
}
DIMENSION_CHOICES: dict[str, type[models.TextChoices]] = {
    "auth": Auth,
    "client": Client,
    "checksum": Checksum,
}


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


# What the orchestrator counts of a campaign's measurements (Campaign fields of these names;
# pScheduler's states): planned in its cycle, done, failed, missed (not begun), late.
CAMPAIGN_COUNTERS = ("planned", "done", "failed", "missed", "late")


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
    # The copy completed, but the source's and the destination's digests differ.
    CHECKSUM_MISMATCH = "checksum-mismatch", "Checksum mismatch"


class PrelimKind(models.TextChoices):
    CONCURRENCY = "concurrency", "Concurrency sweep (Figure 3)"
    FILESIZE = "filesize", "File size sweep (Figure 4)"


class PrelimMethod(models.TextChoices):
    CP = "cp", "cp between memory-backed directories"
    HTTPS = "https", "HTTPS-TPC between two XRootD instances"
    GRIDFTP = "gridftp", "GridFTP-TPC between two GridFTP instances"
