"""The SystemRDL description of the control port (``merit.flow.rdl``) against ``merit.regmap``:
compiled by systemrdl-compiler, read back through the generated C header, byte-reproducible."""

import shutil
import subprocess

import pytest

pytest.importorskip("amaranth")
pytest.importorskip("systemrdl")
pytest.importorskip("peakrdl_cheader")

from merit.flow import rdl  # noqa: E402
from merit.regmap import Access, register_map  # noqa: E402


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    out = tmp_path_factory.mktemp("rdl")
    rdl.export(out)
    return out


def _c_name(reg, field=None):
    name = f"MERITZ__{reg}"
    return name if field is None else f"{name}__{rdl.field_identifier(field).upper()}"


def test_compiled_registers_and_fields_equal_the_register_map(exported):
    from systemrdl.node import FieldNode, RegNode

    rmap = register_map()
    root = rdl.compile_rdl(exported / "meritz.rdl")
    regs = [node for node in root.top.descendants() if isinstance(node, RegNode)]
    plain = [r for r in regs if not r.is_array]
    assert [(r.inst_name, r.absolute_address) for r in plain] == \
        [(r.name, r.offset) for r in rmap.registers]
    for node, reg in zip(plain, rmap.registers, strict=True):
        fields = [f for f in node.children() if isinstance(f, FieldNode)]
        got = sorted((f.low, f.width, f.get_property("name")) for f in fields)
        assert got == sorted((f.lsb, f.width, f.name) for f in reg.fields), reg.name
        for f, spec in zip(sorted(fields, key=lambda f: f.low),
                           sorted(reg.fields, key=lambda f: f.lsb), strict=True):
            access = spec.access or reg.access
            assert f.is_sw_writable == (access is not Access.RO), (reg.name, spec.name)
            assert ("signed" in f.get_property("desc")) == spec.signed, (reg.name, spec.name)
            if access is Access.W1C:
                assert f.get_property("onwrite").name == "woclr"
            if access is Access.W1:
                assert f.get_property("singlepulse")
    (lut,) = [r for r in regs if r.is_array]
    assert (lut.inst_name, lut.raw_absolute_address, lut.array_dimensions) == \
        ("LUT", rmap.lut_base, [rmap.lut_words])


def test_field_identifiers_are_unique_identifiers():
    assert rdl.field_identifier("rp0[1].stride[3]") == "rp0_1_stride_3"
    with pytest.raises(ValueError, match="non-empty string, not ''"):
        rdl.field_identifier("")


@pytest.mark.skipif(shutil.which("cc") is None, reason="needs a C compiler")
def test_the_c_header_places_every_register_and_field_as_the_map_does(exported, tmp_path):
    rmap = register_map()
    lines = ['#include <stddef.h>', '#include <stdio.h>', '#include "meritz.h"',
             "int main(void) {"]
    expect = []
    for reg in rmap.registers:
        lines.append(f'  printf("%zu\\n", offsetof(meritz_t, {reg.name}));')
        expect.append(reg.offset)
        for f in reg.fields:
            lines.append(f'  printf("%d %d\\n", {_c_name(reg.name, f.name)}_bp, '
                         f'{_c_name(reg.name, f.name)}_bw);')
            expect.append(f"{f.lsb} {f.width}")
    lines.append('  printf("%zu\\n", offsetof(meritz_t, LUT));')
    expect.append(rmap.lut_base)
    lines += ["  return 0;", "}", ""]
    (tmp_path / "check.c").write_text("\n".join(lines))
    subprocess.run(["cc", "-Wall", "-Werror", "-I", str(exported), "-o", "check", "check.c"],
                   cwd=tmp_path, check=True)
    out = subprocess.run([str(tmp_path / "check")], capture_output=True, text=True, check=True)
    assert out.stdout.split("\n")[:-1] == [str(e) for e in expect]


def test_two_exports_are_byte_identical(exported, tmp_path):
    rdl.export(tmp_path)
    for path in sorted(p for p in exported.rglob("*") if p.is_file()):
        twin = tmp_path / path.relative_to(exported)
        assert twin.read_bytes() == path.read_bytes(), path.name
