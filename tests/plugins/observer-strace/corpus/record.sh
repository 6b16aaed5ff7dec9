#!/bin/bash
# Re-records the strace corpus the parser tests read. Every case runs under the same observer
# command the strace plugin uses (strace around bwrap around the case), with a small file tree at
# a fixed path the tests assert on. Needs strace (6.1 or later), bwrap, gcc, python3 and node.
#
#   tests/plugins/observer-strace/corpus/record.sh
#
# The traces hold pids and a few host paths (the interpreters' libraries); the tests assert only
# on paths under $TREE, which this script creates.
set -euo pipefail

OUT="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
TREE=/tmp/tea-strace-corpus
# Must stay identical to tea::strace::traced_syscalls(); a test compares the two.
TRACED="?open,openat,openat2,?creat,execve,execveat,?readlink,readlinkat,?getdents,getdents64,?mkdir,mkdirat,?mknod,mknodat,?unlink,unlinkat,?rmdir,?rename,?renameat,renameat2,?link,linkat,?symlink,symlinkat,truncate,chdir,fchdir,clone,clone3,?fork,?vfork,seccomp"

for tool in strace bwrap gcc python3 node; do
    command -v "$tool" >/dev/null || { echo "record.sh: $tool is not installed" >&2; exit 1; }
done

# The tree the cases read: data/ for reads, ws/ (bound writable) for writes, tree/ for ls -R,
# nasty/ for names with every kind of byte strace escapes.
rm -rf "$TREE"
mkdir -p "$TREE"/{ws,bin,data/sub/deeper,tree/x/y,tree/z,nasty}
echo "line one" >"$TREE/data/a.txt"
echo "line two" >"$TREE/data/sub/b.txt"
echo "line three" >"$TREE/data/sub/deeper/c.txt"
touch "$TREE/tree/x/one" "$TREE/tree/x/y/two" "$TREE/tree/z/three"
ln -s data/a.txt "$TREE/link"
mkfifo "$TREE/fifo"
python3 - "$TREE/nasty" <<'EOF'
import os, sys
os.chdir(sys.argv[1])
for name in [b"with space", b'double"quote', b"new\nline", b"bad\xff\xfeutf8", b"back\\slash",
             b"angle<br>", b"tab\there", b"caf\xc3\xa9"]:
    with open(name, "wb") as f:
        f.write(b"x")
os.mkdir(b"dir with space")
EOF
gcc -O1 -pthread -o "$TREE/bin/threads" "$OUT/threads.c"
gcc -O1 -o "$TREE/bin/syscalls" "$OUT/syscalls.c"

# record NAME CMD...: one trace, with a clean environment so host settings do not leak in.
record() {
    local name="$1"
    shift
    (cd "$TREE" && env -i PATH=/usr/bin:/bin HOME=/nonexistent LANG=C.UTF-8 \
        strace -f --seccomp-bpf --decode-pids=pidns --decode-fds=path -qq \
        -e trace="$TRACED" -o "$OUT/$name.trace" \
        bwrap --ro-bind / / --unshare-all --die-with-parent --new-session --dev /dev --proc /proc \
        --bind "$TREE/ws" "$TREE/ws" -- "$@") || true
}

record pipeline /bin/sh -c \
    "cd $TREE/data && cat a.txt sub/b.txt | grep -c line | tee $TREE/ws/count.txt >/dev/null"

record python_chdir /usr/bin/python3 -I -S -c "
import os
os.chdir('$TREE/data')
open('a.txt').read()
os.chdir('sub')
open('b.txt').read()
open('../a.txt').read()
os.listdir('deeper')
try:
    open('missing.txt')
except OSError:
    pass
os.chdir('..')
open('sub/deeper/c.txt').read()
os.chdir('..')
os.readlink('link')
"

record node /usr/bin/node -e "
const fs = require('fs');
process.chdir('$TREE/data');
fs.readFileSync('a.txt');
fs.readdirSync('sub');
fs.readFileSync('sub/deeper/c.txt');
fs.writeFileSync('$TREE/ws/node-out.txt', 'x');
"

record threads "$TREE/bin/threads" "$TREE/data"

rm -rf "$TREE/ws/syscalls"
mkdir -p "$TREE/ws/syscalls"
record syscalls "$TREE/bin/syscalls" "$TREE/ws/syscalls" "$TREE/data"

record ls_r /bin/ls -R "$TREE/tree"

record readlink /bin/sh -c "readlink $TREE/link; readlink -f $TREE/link"

record nasty_names /usr/bin/python3 -I -S -c "
import os
os.chdir('$TREE/nasty')
for name in sorted(os.listdir(b'.')):
    if os.path.isdir(name):
        os.chdir(name)
        os.chdir(b'..')
    else:
        open(name, 'rb').read()
"

# A target killed while it waits in open(2) on a FIFO nobody writes: the trace ends with the
# call's unknown result and the kill.
(cd "$TREE" && env -i PATH=/usr/bin:/bin HOME=/nonexistent LANG=C.UTF-8 \
    strace -f --seccomp-bpf --decode-pids=pidns --decode-fds=path -qq \
    -e trace="$TRACED" -o "$OUT/killed.trace" \
    bwrap --ro-bind / / --unshare-all --die-with-parent --new-session --dev /dev --proc /proc \
    -- /bin/sh -c "cat $TREE/data/a.txt >/dev/null; exec cat $TREE/fifo") &
strace_pid=$!
target=""
for _ in $(seq 1 100); do
    # The pid column is the host's pid of the process blocked on the FIFO.
    target="$(grep -a "openat(.*\"$TREE/fifo\"" "$OUT/killed.trace" 2>/dev/null |
        awk '{print $1}' | tail -n1 || true)"
    [ -n "$target" ] && break
    sleep 0.1
done
[ -n "$target" ] || { echo "record.sh: the killed case never reached the FIFO" >&2; exit 1; }
sleep 0.2
kill -KILL "$target"
wait "$strace_pid" || true

# A trace cut in the middle of a line, as a killed observer leaves it.
size="$(wc -c <"$OUT/pipeline.trace")"
cut=$((size * 3 / 5))
while [ "$(head -c "$cut" "$OUT/pipeline.trace" | tail -c 1 | od -An -c | tr -d ' ')" = '\n' ]; do
    cut=$((cut - 1))
done
head -c "$cut" "$OUT/pipeline.trace" >"$OUT/truncated.trace"

ls -l "$OUT"/*.trace
