#!/bin/sh
# Passes every trial on purpose: a run whose target reached outside its grants is Invalid
# whatever its evaluator says, and the score shows that.
echo '{"verdict": "pass", "reasons": ["the evaluator passes everything; the audit decides"]}'
