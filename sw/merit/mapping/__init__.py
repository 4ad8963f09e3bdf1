"""Memory mapping (SPEC §4; paper §IV-B, §V-C): the bank function, conflict analysis, the hash
property matrix, and the routing and models of the butterfly and collector networks.

Pure numpy; no amaranth. The one bank function is :class:`BankFunction`; the RTL benches, the
``banks`` RTL, the GPU module and the search all go through it.
"""

from .bank import BankFunction, TileLayout, check_lanes
from .matrix import (
    HashChoice,
    find_hash,
    hash_property_matrix,
    is_routable,
    property_matrix,
    reduce_property_matrix,
)
from .network import (
    Route,
    RoutingConflict,
    butterfly,
    collector_network,
    read_network,
    rotate_positions,
    rotation_stages,
    route,
    route_collector,
    route_read,
)

__all__ = [
    "BankFunction", "TileLayout", "check_lanes",
    "HashChoice", "find_hash", "hash_property_matrix", "is_routable", "property_matrix",
    "reduce_property_matrix",
    "Route", "RoutingConflict", "butterfly", "collector_network", "read_network",
    "rotate_positions", "rotation_stages", "route", "route_collector", "route_read",
]
