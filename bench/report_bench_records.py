#!/usr/bin/env python3
"""Writes a run folder for bench/report_bench.sh: TRIALS trials of CALLS calls, each call with
FINDINGS paths outside the grants (in audit.findings and observedMounts, distinct across the run),
its stdout and stderr files of OUTPUT bytes each, run.json, manifest.json and each trial's
verdict.json, in the shapes docs/records.md and docs/audit.md give. The run scores Invalid (every
path is outside the grants); what is measured is the page, not the verdict.

Usage: report_bench_records.py RUNS_DIR [--trials N] [--calls N] [--findings N] [--output BYTES]
Prints the run's folder."""

import argparse
import json
import os

RUN_ID = "20261206T120000.000000Z-bench1"
REASONS = ["outside the allowlist", "access to always-listed PATH"]
SYSCALLS = [["openat"], ["openat", "newfstatat"], ["execve"], ["readlinkat", "openat"]]


def write_json(path, value):
    with open(path, "w", encoding="utf-8") as f:
        json.dump(value, f, indent=2, sort_keys=True)
        f.write("\n")


def output_text(size, label):
    """Target-like log lines, `size` bytes, some with a character the page must escape."""
    line = (f"{label}: counted 42 words in input.txt, wrote out/report.txt\n"
            f"{label}: done <ok>\n")
    return (line * (size // len(line) + 1))[:size]


def call_record(trial, number, findings, output):
    probe = f"probe-{number:03d}"
    stem = f"{number:03d}-{probe}"
    paths = [f"/home/user/.cache/t{trial}/c{number:03d}/secret-{k:02d}.txt" for k in range(findings)]
    return stem, {
        "args": ["count", f"input-{number}.txt"],
        "audit": {
            "audited": True,
            "complete": True,
            "events": 70 + findings,
            "findings": [
                {
                    "path": p,
                    "reason": REASONS[k % len(REASONS)],
                    "syscalls": SYSCALLS[k % len(SYSCALLS)],
                    "count": 1 + k % 3,
                    "refused": k % 2 == 0,
                }
                for k, p in enumerate(paths)
            ],
            "observer": "strace",
            "omitted": 0,
            "reason": "",
        },
        "budget": {
            "backendLimits": {"cpuSeconds": 3600, "fileSizeBytes": 4294967296,
                              "processesPerIdentity": None},
            "memoryBytes": 12638076900,
            "memoryEnforcedBy": "cgroup1",
            "memoryPeakBytes": 2572288,
            "oomKills": 0,
            "processes": 4096,
            "processesEnforcedBy": "cgroup1",
            "refusedForks": 0,
        },
        "budgetHits": [],
        "elapsedMs": 150.0 + (number * 7 + trial * 13) % 90,
        "entry": "wordcount",
        "executable": "wordcount",
        "exitCode": 0,
        "identity": {"from": "backend", "gid": 995, "lent": [], "uid": 999},
        "infrastructureError": False,
        "observedMounts": paths,
        "probe": probe,
        "signal": 0,
        "startError": "",
        "started": True,
        "status": 0,
        "stderr": f"calls/{stem}.stderr",
        "stderrBytes": output,
        "stderrTruncated": False,
        "stdout": f"calls/{stem}.stdout",
        "stdoutBytes": output,
        "stdoutTruncated": False,
        "targetStarted": True,
        "timedOut": False,
    }


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("runs_dir")
    parser.add_argument("--trials", type=int, default=10)
    parser.add_argument("--calls", type=int, default=100)
    parser.add_argument("--findings", type=int, default=10)
    parser.add_argument("--output", type=int, default=3000)
    a = parser.parse_args()

    run_dir = os.path.join(a.runs_dir, RUN_ID)
    trials = []
    observed = []  # the manifest's: each path with its trial and reason
    for t in range(1, a.trials + 1):
        calls_dir = os.path.join(run_dir, "trials", str(t), "calls")
        os.makedirs(calls_dir)
        calls = []
        for n in range(1, a.calls + 1):
            stem, call = call_record(t, n, a.findings, a.output)
            write_json(os.path.join(calls_dir, stem + ".json"), call)
            for stream in ("stdout", "stderr"):
                with open(os.path.join(calls_dir, f"{stem}.{stream}"), "w", encoding="utf-8") as f:
                    f.write(output_text(a.output, f"{stream} of trial {t} call {n}"))
            calls.append(call)
            observed += [{"path": f["path"], "trials": [t], "reason": f["reason"]}
                         for f in call["audit"]["findings"]]
        verdict = {"elapsedMs": 140.0, "exitCode": 0, "reasons": [], "signal": 0,
                   "stderr": "evaluator.stderr", "stdout": "evaluator.stdout",
                   "timedOut": False, "verdict": "pass", "view": "grader"}
        trial_dir = os.path.join(run_dir, "trials", str(t))
        write_json(os.path.join(trial_dir, "verdict.json"), verdict)
        for stream in ("stdout", "stderr"):
            with open(os.path.join(trial_dir, "evaluator." + stream), "w", encoding="utf-8") as f:
                f.write("")
        trials.append({
            "artifacts": {},
            "budgetHits": [],
            "calls": calls,
            "canaryScan": None,
            "index": t,
            "infrastructureErrors": 0,
            "observedMounts": [p for c in calls for p in c["observedMounts"]],
            "observedMountsChannel": "complete",
            "verdict": verdict,
        })
    observed.sort(key=lambda o: o["path"])
    total = len(observed)
    write_json(os.path.join(run_dir, "run.json"), {
        "backend": "bubblewrap",
        "canaries": None,
        "conditionArm": "run",
        "confinement": "bubblewrap",
        "declaredConfinement": True,
        "egress": [],
        "egressRefusals": [],
        "evaluation": "/srv/bench/.tea",
        "finishedAt": "2026-12-06T12:05:00Z",
        "hostSocketTruncation": [],
        "hostUnchanged": [],
        "logins": [],
        "manifest": "manifest.json",
        "observer": "strace",
        "project": "/srv/bench",
        "runId": RUN_ID,
        "schemaVersion": 1,
        "servicesFailed": [],
        "source": {"commit": "0" * 40, "gitDir": "/srv/bench/.git",
                   "history": "private repository", "kind": "git"},
        "startedAt": "2026-12-06T12:00:00Z",
        "status": "complete",
        "summary": f"run {RUN_ID}: {a.trials} trials, {total} paths outside the grants",
        "trialCount": a.trials,
        "trials": trials,
        "weakened": [],
    })
    write_json(os.path.join(run_dir, "manifest.json"), {
        "allowedMounts": [
            {"access": "read-write", "mount": "workspace",
             "what": "a fresh checkout of the evaluated commit for each trial"},
            {"access": "read-only", "mount": "operating system",
             "paths": ["/usr", "/bin", "/lib", "/etc", "/dev"]},
        ],
        "confinement": "bubblewrap",
        "forbiddenInputs": [
            {"input": "the evaluation folder", "note": "covered", "path": "/srv/bench/.tea"},
        ],
        "observedMounts": observed,
        "runId": RUN_ID,
        "schemaVersion": 1,
        "trials": a.trials,
    })
    print(run_dir)


if __name__ == "__main__":
    main()
