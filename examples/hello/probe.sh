#!/bin/sh
# A sample target for `tea-evaluate exec`: it reports what a confined call sees.
echo "hello from a confined call"
echo "uid: $(id -u)  pid in its namespace: $$  cwd: $PWD"
echo "HOME=$HOME"
echo "TMPDIR=$TMPDIR"
echo "processes it can see: $(ls /proc | grep -c '^[0-9]')"
if echo probe > "$TMPDIR/probe" && rm "$TMPDIR/probe"; then echo "temp directory: writable"; fi
if touch /etc/tea-evaluate-probe 2>/dev/null; then echo "/etc: WRITABLE"; else echo "/etc: read-only"; fi
if cat secret/answer.txt 2>/dev/null; then echo "withheld folder: READABLE"; else echo "withheld folder: hidden"; fi
