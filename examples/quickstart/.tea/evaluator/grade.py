#!/usr/bin/python3
"""The quickstart's evaluator: grades one trial from its records, outside the confinement.

tea-evaluate runs it after the trial's calls with TEA_TRIAL_DIR naming the trial's records
(calls/*.json, their .stdout and .stderr files, artifacts/). It answers on stdout with
{"verdict": "pass" | "fail", "reasons": [...]}.
"""
import json
import os
import pathlib

here = pathlib.Path(__file__).resolve().parent
answers = json.loads((here / "answers.json").read_text())
trial = pathlib.Path(os.environ["TEA_TRIAL_DIR"])

reasons = []
for record_file in sorted((trial / "calls").glob("*.json")):
    call = json.loads(record_file.read_text())
    probe = call["probe"]
    got = (trial / call["stdout"]).read_text(errors="replace").strip()
    want = answers.get(probe)
    if call["status"] != 0:
        reasons.append(f"{probe}: exit status {call['status']}")
    elif want is not None and got != want:
        reasons.append(f"{probe}: printed {got!r}, expected {want!r}")

report = trial / "artifacts" / "wordcount" / "report"
if not report.is_file():
    reasons.append("report: the artifact out/report.txt was not produced")
elif report.read_text(errors="replace").strip() != answers["reportArtifact"]:
    reasons.append("report: out/report.txt does not hold the expected line")

print(json.dumps({"verdict": "fail" if reasons else "pass", "reasons": reasons}))
