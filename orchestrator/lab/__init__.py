"""The lab: real XRootD-HTTPS and GridFTP servers on this machine, one per lab node.

inventory = start_lab(home, nodes=3, file_size=16 << 20)   # -> LabInventory
inventory = load_inventory()                               # what the orchestrator reads
stop_lab(home)

The lab's own modules import each other by their full module path, never from this package:
it re-exports the lab's entry points for the rest of the project only.
"""

from orchestrator.lab.inventory import LabInventory, inventory_path, load_inventory
from orchestrator.lab.lifecycle import DEFAULT_FILE_SIZE, lab_status, start_lab, stop_lab
from orchestrator.lab.topology import LabNetwork

__all__ = [
    "DEFAULT_FILE_SIZE",
    "LabInventory",
    "LabNetwork",
    "inventory_path",
    "lab_status",
    "load_inventory",
    "start_lab",
    "stop_lab",
]
