#!/usr/bin/env python3
"""Extract the definitions vendorfake/dropbox's shape test checks from the
Dropbox API spec's stone files (github.com/dropbox/dropbox-api-spec, MIT
licence, LICENSE beside): the named roots and every definition of the same
files they refer to, transitively, each copied verbatim with its namespace
line. References into namespaces not extracted stay unresolved (the test
resolves a type only when a served field uses it).

Usage: extract_stone.py DIR > subset.stone, DIR holding NAMESPACE.stone files.
"""
import re
import sys

ROOTS = {
    "files": ["Metadata", "ListFolderResult", "DeleteResult", "ListFolderError", "ListFolderContinueError",
              "GetMetadataError", "DownloadError", "DeleteError", "RestoreError", "UploadError", "UploadArg",
              "UploadSessionStartArg", "UploadSessionStartResult", "UploadSessionStartError",
              "UploadSessionAppendArg", "UploadSessionAppendError", "UploadSessionFinishArg", "UploadSessionFinishError"],
    "users": ["SpaceUsage"],
    "auth": ["AuthError", "RateLimitError"],
    "common": ["DropboxTimestamp"],
    "users_common": ["AccountId"],
}
KEYWORDS = ("struct", "union", "union_closed", "alias")

def blocks(text):
    out, cur, name = {}, [], None
    for line in text.splitlines():
        if line and not line[0].isspace():
            if name:
                out[name] = cur
            name, cur = None, []
            m = re.match(r"(struct|union_closed|union|alias)\s+(\w+)", line)
            if m:
                name = m.group(2)
        if name:
            cur.append(line)
    if name:
        out[name] = cur
    return out

def strip_docs(lines):
    """Drop doc strings and examples, which may mention type names."""
    out, in_doc, in_example = [], False, False
    for l in lines:
        s = l.strip()
        if in_doc:
            if s.endswith('"') and not s.endswith('\\"'):
                in_doc = False
            continue
        if s.startswith('"'):
            if not (len(s) > 1 and s.endswith('"') and not s.endswith('\\"')):
                in_doc = True
            continue
        indent = len(l) - len(l.lstrip())
        if s.startswith("example "):
            in_example = True
            continue
        if in_example and (indent > 4 or not s):
            continue
        in_example = False
        out.append(l)
    return out

d = sys.argv[1]
result = []
for ns, roots in ROOTS.items():
    text = open(f"{d}/{ns}.stone").read()
    bl = blocks(text)
    want, todo = [], list(roots)
    while todo:
        n = todo.pop(0)
        if n in want or n not in bl:
            continue
        want.append(n)
        body = " ".join(strip_docs(bl[n][1:])) + " " + bl[n][0].split("=", 1)[-1] + " " + (bl[n][0].split("extends")[1] if "extends" in bl[n][0] else "")
        for ref in re.findall(r"(?<![\w.])([A-Z]\w*)", body):
            if ref not in want:
                todo.append(ref)
    result.append(f"namespace {ns}\n")
    for n in sorted(want):
        result.append("\n".join(bl[n]).rstrip() + "\n")
sys.stdout.write("\n".join(result))
