#!/usr/bin/python3
"""The http-service example's evaluator: grades one trial from its records.

Each call record of an HTTP entry holds the exchange the runtime had with the service through
the bridge, and "expect": whether the answer met the probe's expectation and, when not, how it
differed. The trial passes when every call met its expectation and the stored note came back.
"""
import json
import os
import pathlib

trial = pathlib.Path(os.environ["TEA_TRIAL_DIR"])
reasons = []
for record_file in sorted((trial / "calls").glob("*.json")):
    call = json.loads(record_file.read_text())
    probe = call["probe"]
    service = call.get("service") or {}
    if service.get("refusal"):
        reasons.append(f"{probe}: the service was refused: {service['refusal']}")
        continue
    expect = call.get("expect")
    if expect is None:
        reasons.append(f"{probe}: no expectation was compared")
    elif not expect["met"]:
        reasons.append(f"{probe}: " + "; ".join(expect["differences"]))

today = trial / "artifacts" / "notes" / "today"
if not today.is_file() or today.read_text(errors="replace") != "buy milk\n":
    reasons.append("the note stored through the service is not in the workspace")

print(json.dumps({"verdict": "fail" if reasons else "pass", "reasons": reasons}))
