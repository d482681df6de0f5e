"""Server configuration shared by the lab and the container images: one source per server."""

from orchestrator.servers.cluster_roles import ClusterPlace, CmsDelay, cmsd_command
from orchestrator.servers.gridftp import (
    GridftpSettings,
    gridftp_command,
    gridftp_environment,
    render_grid_mapfile,
)
from orchestrator.servers.xrootd import (
    XrootdSettings,
    render_xrootd_config,
    xrootd_command,
    xrootd_environment,
    xrootd_files,
    xrootd_log_file,
)

__all__ = [
    "ClusterPlace",
    "CmsDelay",
    "GridftpSettings",
    "XrootdSettings",
    "cmsd_command",
    "gridftp_command",
    "gridftp_environment",
    "render_grid_mapfile",
    "render_xrootd_config",
    "xrootd_command",
    "xrootd_environment",
    "xrootd_files",
    "xrootd_log_file",
]
