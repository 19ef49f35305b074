#!/usr/bin/env python3
"""Where a .wasm's bytes go: section sizes, then code bytes per crate and the largest functions.

usage: wasm-size.py FILE.wasm [TOP]

Function names come from the `name` section, so build without stripping (`make wasm-size` does:
CARGO_PROFILE_RELEASE_STRIP=false into its own target dir). Rust's legacy mangling
(`_ZN<len><ident>...`) is decoded enough to tell the crate and the path.
"""
import re
import sys
from collections import Counter

SECTIONS = {0: "custom", 1: "type", 2: "import", 3: "function", 4: "table", 5: "memory", 6: "global",
            7: "export", 8: "start", 9: "element", 10: "code", 11: "data", 12: "datacount"}


def leb(data, i):
    n = shift = 0
    while True:
        b = data[i]
        i += 1
        n |= (b & 0x7F) << shift
        shift += 7
        if b < 0x80:
            return n, i


def demangle_v0(name):
    """`_RNvNtCs…_3std9panicking15panic_with_hook` -> `std::panicking::panic_with_hook` (Rust's v0
    mangling, which the standard library uses: the crate root `C`, then each `<len><ident>` in order;
    enough to tell the crate and the path, not a full decoder)."""
    m = re.search(r"C(?:s[0-9a-zA-Z]*_)?(\d+)", name)
    if not m:
        return name
    parts, i = [], m.start(1)
    while i < len(name):
        d = re.match(r"(\d+)_?", name[i:])
        if not d:
            i += 1
            continue
        n = int(d.group(1))
        start = i + d.end()
        parts.append(name[start:start + n])
        i = start + n
    return "::".join(p for p in parts if p)


def demangle(name):
    """`_ZN4core3fmt5write17h…E` -> `core::fmt::write` (legacy mangling; v0 through `demangle_v0`;
    else the name as is)."""
    if re.match(r"_?RN", name):
        return demangle_v0(name)
    m = re.match(r"_ZN(.*)E$", name)
    if not m:
        return name
    body, parts, i = m.group(1), [], 0
    while i < len(body) and body[i].isdigit():
        j = i
        while body[j].isdigit():
            j += 1
        n = int(body[i:j])
        parts.append(body[j:j + n])
        i = j + n
    if parts and re.fullmatch(r"h[0-9a-f]{16}", parts[-1]):
        parts.pop()
    text = "::".join(parts)
    for a, b in [("$LT$", "<"), ("$GT$", ">"), ("$u20$", " "), ("$RF$", "&"), ("$C$", ","), ("..", "::"),
                 ("$u7b$", "{"), ("$u7d$", "}"), ("$BP$", "*"), ("$u5b$", "["), ("$u5d$", "]")]:
        text = text.replace(a, b)
    return text


def crate_of(name):
    text = name.lstrip("_<&*").replace("impl ", "")
    text = text[4:] if text.startswith("mut ") else text
    head = re.split(r"::| as |<|>", text, maxsplit=1)[0].strip()
    return head or name


def main():
    path = sys.argv[1]
    top = int(sys.argv[2]) if len(sys.argv) > 2 else 25
    data = open(path, "rb").read()
    i, sizes, bodies, names, imported = 8, Counter(), [], {}, 0
    while i < len(data):
        sid = data[i]
        size, i = leb(data, i + 1)
        end = i + size
        label = SECTIONS.get(sid, str(sid))
        if sid == 0:
            nlen, j = leb(data, i)
            cname = data[j:j + nlen].decode()
            label = f"custom:{cname}"
            if cname == "name":
                j += nlen
                while j < end:
                    sub, j = leb(data, j)
                    slen, j = leb(data, j)
                    if sub == 1:
                        k = j
                        count, k = leb(data, k)
                        for _ in range(count):
                            idx, k = leb(data, k)
                            ln, k = leb(data, k)
                            names[idx] = data[k:k + ln].decode(errors="replace")
                            k += ln
                    j += slen
        elif sid == 2:
            count, j = leb(data, i)
            for _ in range(count):
                for _ in range(2):
                    ln, j = leb(data, j)
                    j += ln
                kind = data[j]
                j += 1
                if kind == 0:
                    imported += 1
                    _, j = leb(data, j)
                elif kind == 1:
                    j += 1
                    flags, j = leb(data, j)
                    _, j = leb(data, j)
                    if flags & 1:
                        _, j = leb(data, j)
                elif kind == 2:
                    flags, j = leb(data, j)
                    _, j = leb(data, j)
                    if flags & 1:
                        _, j = leb(data, j)
                else:
                    j += 2
        elif sid == 10:
            count, j = leb(data, i)
            for n in range(count):
                bsize, j = leb(data, j)
                bodies.append((imported + n, bsize))
                j += bsize
        sizes[label] += end - i
        i = end
    print(f"{path}: {len(data):,} bytes")
    for label, n in sizes.most_common():
        print(f"  section {label:<24} {n:>9,}")
    crates, funcs = Counter(), []
    for idx, bsize in bodies:
        name = demangle(names.get(idx, f"func{idx}"))
        crates[crate_of(name)] += bsize
        funcs.append((bsize, name))
    print("code bytes by crate (generic code counts where it is defined):")
    for crate, n in crates.most_common(top):
        print(f"  {n:>9,}  {crate}")
    print(f"largest functions:")
    for bsize, name in sorted(funcs, reverse=True)[:top]:
        print(f"  {bsize:>9,}  {name[:150]}")


main()
