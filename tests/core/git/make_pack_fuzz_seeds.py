#!/usr/bin/env python3
"""Makes the seed corpus of pack_reader_fuzz.cpp with real git: a small history whose blobs and
trees git stores as deltas, packed with offset deltas, with deltas by id, and indexed with the
table of large offsets, and the raw deltas git wrote (each beside its base).

Usage: make_pack_fuzz_seeds.py OUTPUT_DIR (pack_reader_fuzz_corpus). The files it writes are committed; run it again only
to change the seeds. Each seed is framed as the fuzz target reads it: one byte (0: an index and its
pack, 1: a base and a delta), the first part's length (4 bytes, little-endian), both parts."""
import os
import struct
import subprocess
import sys
import tempfile
import zlib


def git(cwd, *args, text=True):
    env = dict(os.environ, GIT_CONFIG_NOSYSTEM="1", HOME=cwd, GIT_AUTHOR_NAME="Seed",
               GIT_AUTHOR_EMAIL="seed@example.com", GIT_COMMITTER_NAME="Seed",
               GIT_COMMITTER_EMAIL="seed@example.com", GIT_AUTHOR_DATE="2024-01-01T00:00:00Z",
               GIT_COMMITTER_DATE="2024-01-01T00:00:00Z")
    out = subprocess.run(["git", *args], cwd=cwd, env=env, check=True, capture_output=True)
    return out.stdout.decode() if text else out.stdout


def frame(mode, first, second):
    return bytes([mode]) + struct.pack("<I", len(first)) + first + second


def history(repo):
    git(repo, "init", "-q", "-b", "main")
    lines = [f"line {i}: the quick brown fox jumps over the lazy dog\n" for i in range(24)]
    os.makedirs(os.path.join(repo, "src"))
    for version in range(3):
        lines[version * 7] = f"changed in version {version}\n"
        with open(os.path.join(repo, "src", "notes.txt"), "w") as f:
            f.writelines(lines)
        with open(os.path.join(repo, "README"), "w") as f:
            f.write(f"readme {version}\n")
        git(repo, "add", "-A")
        git(repo, "commit", "-qm", f"version {version}")
    git(repo, "tag", "-a", "v1", "-m", "a release")


def only_pack(repo):
    pack_dir = os.path.join(repo, ".git", "objects", "pack")
    packs = [f for f in os.listdir(pack_dir) if f.endswith(".pack")]
    assert len(packs) == 1, packs
    base = os.path.join(pack_dir, packs[0][:-len(".pack")])
    return base + ".idx", base + ".pack"


def read(path):
    with open(path, "rb") as f:
        return f.read()


def deltas(repo, idx_path, pack):
    """(base bytes, raw delta) for each delta entry of the pack, from git's own listing."""
    listing = git(repo, "verify-pack", "-v", idx_path).splitlines()
    entries = []
    for line in listing:
        parts = line.split()
        if len(parts) >= 5 and len(parts[0]) == 40 and parts[1] in ("blob", "tree", "commit"):
            entries.append(parts)
    by_offset = sorted(int(p[4]) for p in entries)
    found = []
    for parts in entries:
        if len(parts) < 7:
            continue  # a whole object
        offset = int(parts[4])
        at = offset
        c = pack[at]
        at += 1
        while c & 0x80:
            c = pack[at]
            at += 1
        kind = (pack[offset] >> 4) & 7
        if kind == 6:
            c = pack[at]
            at += 1
            while c & 0x80:
                c = pack[at]
                at += 1
        elif kind == 7:
            at += 20
        else:
            continue
        delta = zlib.decompressobj().decompress(pack[at:])
        base = git(repo, "cat-file", parts[1], parts[6], text=False)
        found.append((base, delta))
    return found


def main():
    out_dir = sys.argv[1]
    os.makedirs(out_dir, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="tea-pack-seeds-") as work:
        repo = os.path.join(work, "repo")
        os.makedirs(repo)
        history(repo)
        seeds = {}

        git(repo, "repack", "-adfq")
        idx_path, pack_path = only_pack(repo)
        idx, pack = read(idx_path), read(pack_path)
        seeds["pack-offset-deltas"] = frame(0, idx, pack)
        for i, (base, delta) in enumerate(deltas(repo, idx_path, pack)[:3]):
            seeds[f"delta-{i}"] = frame(1, base, delta)

        big_idx = os.path.join(work, "large.idx")
        git(repo, "index-pack", "--index-version=2,64", "-o", big_idx, pack_path)
        seeds["pack-large-offsets"] = frame(0, read(big_idx), pack)

        git(repo, "-c", "repack.useDeltaBaseOffset=false", "repack", "-adfq")
        idx_path, pack_path = only_pack(repo)
        seeds["pack-ref-deltas"] = frame(0, read(idx_path), read(pack_path))

    for name, data in seeds.items():
        with open(os.path.join(out_dir, name), "wb") as f:
            f.write(data)
        print(f"{name}: {len(data)} bytes")


if __name__ == "__main__":
    main()
