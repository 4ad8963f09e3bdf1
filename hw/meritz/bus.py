"""The buses of MERIT-z as ``wiring.Signature`` subclasses: AXI4 (DRAM) and AXI4-Lite (control).

Written as Amaranth's ``stream.Signature``: a signature object with its parameters as read-only
properties, equal to another of the same parameters, seen from the manager (``Out`` of it on a
manager, ``In`` of it on a subordinate). Members are the AXI signal names in lower case
(``araddr``, ``rvalid``, ...), so a member ``m_axi`` becomes the ports ``m_axi__araddr`` ...; only
the signals MERIT-z uses are present (no ``*lock``, ``*cache``, ``*prot`` of AXI4, ``*qos``,
``*user``; AXI4-Lite has ``awprot`` / ``arprot``).
"""

from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from merit.checks import check_int, check_range

__all__ = ["AXI4Signature", "AXI4LiteSignature", "ID_WIDTH", "ADDR_WIDTH", "DATA_WIDTH"]

#: Defaults: IDs of one TAU's requests, byte addresses, the 64-bit DRAM data bus (§V of the
#: MERIT paper).
ID_WIDTH = 4
ADDR_WIDTH = 32
DATA_WIDTH = 64


def _check_data_width(data_width):
    check_range("data_width", data_width, 8, 1024)
    if data_width & (data_width - 1):
        raise ValueError(f"data_width must be a power of two, not {data_width}")
    return data_width


class AXI4Signature(wiring.Signature):
    """An AXI4 manager's read and / or write channels (INCR bursts of up to 256 beats).

    Parameters
    ----------
    id_width, addr_width, data_width : int
        Widths of ``*id``, ``*addr`` and ``*data`` (``data_width`` a power of two, ``wstrb`` has
        ``data_width // 8`` bits).
    read, write : bool
        Which channels: the read address and data channels (``ar*``, ``r*``), the write address,
        data and response channels (``aw*``, ``w*``, ``b*``). At least one.

    Members
    -------
    ar* : ``arvalid`` Out(1), ``arready`` In(1), ``arid`` Out(id_width), ``araddr``
        Out(addr_width), ``arlen`` Out(8), ``arsize`` Out(3), ``arburst`` Out(2)
    r* : ``rvalid`` In(1), ``rready`` Out(1), ``rid`` In(id_width), ``rdata`` In(data_width),
        ``rresp`` In(2), ``rlast`` In(1)
    aw*, w*, b* : as ``ar*``; ``wvalid`` Out(1), ``wready`` In(1), ``wdata`` Out(data_width),
        ``wstrb`` Out(data_width // 8), ``wlast`` Out(1); ``bvalid`` In(1), ``bready`` Out(1),
        ``bid`` In(id_width), ``bresp`` In(2)
    """

    def __init__(self, *, id_width=ID_WIDTH, addr_width=ADDR_WIDTH, data_width=DATA_WIDTH,
                 read=True, write=True):
        self._id_width = check_range("id_width", id_width, 1, 32)
        self._addr_width = check_range("addr_width", addr_width, 1, 64)
        self._data_width = _check_data_width(data_width)
        if not isinstance(read, bool) or not isinstance(write, bool):
            raise TypeError(f"read and write must be booleans, not {read!r} and {write!r}")
        if not (read or write):
            raise ValueError("an AXI4 signature needs the read or the write channels, or both")
        self._read, self._write = read, write
        members = {}
        if read:
            members.update({
                "arvalid": Out(1), "arready": In(1), "arid": Out(id_width),
                "araddr": Out(addr_width), "arlen": Out(8), "arsize": Out(3), "arburst": Out(2),
                "rvalid": In(1), "rready": Out(1), "rid": In(id_width), "rdata": In(data_width),
                "rresp": In(2), "rlast": In(1),
            })
        if write:
            members.update({
                "awvalid": Out(1), "awready": In(1), "awid": Out(id_width),
                "awaddr": Out(addr_width), "awlen": Out(8), "awsize": Out(3), "awburst": Out(2),
                "wvalid": Out(1), "wready": In(1), "wdata": Out(data_width),
                "wstrb": Out(data_width // 8), "wlast": Out(1),
                "bvalid": In(1), "bready": Out(1), "bid": In(id_width), "bresp": In(2),
            })
        super().__init__(members)

    id_width = property(lambda self: self._id_width)
    addr_width = property(lambda self: self._addr_width)
    data_width = property(lambda self: self._data_width)
    read = property(lambda self: self._read)
    write = property(lambda self: self._write)

    def _params(self):
        return (self._id_width, self._addr_width, self._data_width, self._read, self._write)

    def __eq__(self, other):
        return type(other) is type(self) and other._params() == self._params()

    def __hash__(self):
        return hash(self._params())

    def __repr__(self):
        return (f"AXI4Signature(id_width={self._id_width}, addr_width={self._addr_width}, "
                f"data_width={self._data_width}, read={self._read}, write={self._write})")


class AXI4LiteSignature(wiring.Signature):
    """An AXI4-Lite manager (single beats, ``awprot`` / ``arprot``, no IDs).

    Parameters
    ----------
    addr_width, data_width : int
        Widths of ``*addr`` and ``*data`` (32 or 64).

    Members
    -------
    ``awvalid`` Out(1), ``awready`` In(1), ``awaddr`` Out(addr_width), ``awprot`` Out(3),
    ``wvalid`` Out(1), ``wready`` In(1), ``wdata`` Out(data_width), ``wstrb`` Out(data_width // 8),
    ``bvalid`` In(1), ``bready`` Out(1), ``bresp`` In(2),
    ``arvalid`` Out(1), ``arready`` In(1), ``araddr`` Out(addr_width), ``arprot`` Out(3),
    ``rvalid`` In(1), ``rready`` Out(1), ``rdata`` In(data_width), ``rresp`` In(2)
    """

    def __init__(self, *, addr_width, data_width=32):
        self._addr_width = check_range("addr_width", addr_width, 1, 64)
        if check_int("data_width", data_width) not in (32, 64):
            raise ValueError(f"data_width must be 32 or 64, not {data_width}")
        self._data_width = data_width
        super().__init__({
            "awvalid": Out(1), "awready": In(1), "awaddr": Out(addr_width), "awprot": Out(3),
            "wvalid": Out(1), "wready": In(1), "wdata": Out(data_width),
            "wstrb": Out(data_width // 8),
            "bvalid": In(1), "bready": Out(1), "bresp": In(2),
            "arvalid": Out(1), "arready": In(1), "araddr": Out(addr_width), "arprot": Out(3),
            "rvalid": In(1), "rready": Out(1), "rdata": In(data_width), "rresp": In(2),
        })

    addr_width = property(lambda self: self._addr_width)
    data_width = property(lambda self: self._data_width)

    def __eq__(self, other):
        return (type(other) is type(self) and other._addr_width == self._addr_width
                and other._data_width == self._data_width)

    def __hash__(self):
        return hash((self._addr_width, self._data_width))

    def __repr__(self):
        return f"AXI4LiteSignature(addr_width={self._addr_width}, data_width={self._data_width})"
