#!/usr/bin/env python3
"""Extract the subset of Microsoft Graph's v1.0 CSDL that vendorfake/graph's
shape test checks: the named types, every type their structural properties
use (recursively), their base types, and the instance-annotation terms that
apply to them.

Usage: extract_csdl.py v1.0-Prod.csdl > graph-v1.0-subset.csdl.xml
where v1.0-Prod.csdl is schemas/v1.0-Prod.csdl of
github.com/microsoftgraph/msgraph-metadata (MIT licence, LICENSE beside).
"""
import sys
import xml.etree.ElementTree as ET

NS = "{http://docs.oasis-open.org/odata/ns/edm}"
ROOTS = ["message", "mailFolder", "driveItem", "drive", "singleValueLegacyExtendedProperty", "uploadSession"]
NAV = {"singleValueExtendedProperties"}  # navigation properties the fake expands

tree = ET.parse(sys.argv[1])
schema = next(e for e in tree.getroot().iter(NS + "Schema") if e.get("Namespace") == "microsoft.graph")
types = {}
for el in schema:
    if el.tag in (NS + "EntityType", NS + "ComplexType", NS + "EnumType"):
        types[el.get("Name")] = el

want, order = set(), []

def short(t):
    t = t.removeprefix("Collection(").removesuffix(")")
    for p in ("graph.", "microsoft.graph."):
        if t.startswith(p):
            return t[len(p):]
    return None

def add(name):
    if name in want or name not in types:
        return
    want.add(name)
    order.append(name)
    el = types[name]
    if el.get("BaseType"):
        add(short(el.get("BaseType")))
    for p in el:
        if p.tag == NS + "Property" or (p.tag == NS + "NavigationProperty" and p.get("Name") in NAV):
            n = short(p.get("Type"))
            if n:
                add(n)

for r in ROOTS:
    add(r)

out = ET.Element("edmx:Edmx", {"Version": "4.0", "xmlns:edmx": "http://docs.oasis-open.org/odata/ns/edmx"})
ds = ET.SubElement(out, "edmx:DataServices")
sch = ET.SubElement(ds, "Schema", {"Namespace": "microsoft.graph", "Alias": "graph", "xmlns": "http://docs.oasis-open.org/odata/ns/edm"})
for name in sorted(order):
    el = types[name]
    copy = ET.SubElement(sch, el.tag.replace(NS, ""), {k: v for k, v in el.attrib.items()})
    for p in el:
        if p.tag in (NS + "Property", NS + "NavigationProperty", NS + "Member"):
            ET.SubElement(copy, p.tag.replace(NS, ""), {k: v for k, v in p.attrib.items()})
for el in schema:
    if el.tag == NS + "Term" and el.get("AppliesTo", "").removeprefix("microsoft.graph.") in want:
        ET.SubElement(sch, "Term", dict(el.attrib))
ET.indent(out)
sys.stdout.write('<?xml version="1.0" encoding="utf-8"?>\n')
sys.stdout.write(ET.tostring(out, encoding="unicode"))
sys.stdout.write("\n")
