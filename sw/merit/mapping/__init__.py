"""Memory mapping (paper §IV-B, §V-C): the bank function, conflict analysis, the hash
property matrix, and the routing and models of the butterfly and collector networks.

Pure numpy; no amaranth. The one bank function is :class:`BankFunction`; the RTL benches, the
``banks`` RTL, the GPU module and the search all go through it.
"""

from .analysis import (
    LaneGrouping,
    MappingReport,
    OperandReport,
    analyze,
    analyze_operand,
    default_grouping,
    lane_coefficients,
    step_bases,
)
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
    rotate_positions,
    rotation_stages,
    route,
    route_collector,
    route_many,
    route_read,
)
from .search import NoMapping, hash_candidates, search, tile_candidates

__all__ = [
    "LaneGrouping", "MappingReport", "OperandReport", "analyze", "analyze_operand",
    "default_grouping", "lane_coefficients", "step_bases",
    "BankFunction", "TileLayout", "check_lanes",
    "HashChoice", "find_hash", "hash_property_matrix", "is_routable", "property_matrix",
    "reduce_property_matrix",
    "Route", "RoutingConflict", "butterfly", "collector_network",
    "rotate_positions", "rotation_stages", "route", "route_collector", "route_many",
    "route_read",
    "NoMapping", "hash_candidates", "search", "tile_candidates",
]
