"""Validate a SARIF log (stdin) with an independent implementation of the
SARIF 2.1.0 object model, sarif-pydantic (installed by scripts/test-env.sh),
for tests/report_formats.rs.

sarif-pydantic's models accept unknown properties; here every property
must be one of the model's (a misspelt or invented key fails), except the
SARIF 2.1.0 properties its 0.6.2 model lacks (SPEC_ONLY, checked by hand
against their own models), and every key must be camelCase as SARIF spells
them (pydantic would also accept snake_case). Prints what the validated
model says: {"version", "base", "successful", "notifications", "rules":
[...], "results": [{"ruleId", "rule", "level", "uri", "uriBaseId",
"startLine", "startColumn", "fingerprint", "message"}]}; exits 1 with the
problems on stderr.
"""

import json
import sys

from pydantic import BaseModel
from sarif_pydantic.sarif import Notification, Sarif

# (model, property) of SARIF 2.1.0 that sarif-pydantic 0.6.2 does not model.
SPEC_ONLY = {
    ("Invocation", "toolExecutionNotifications"): Notification,  # SARIF 2.1.0 §3.20.21
}

doc = json.load(sys.stdin)
problems = []


def keys(v, where):
    """Every key camelCase (free-form bags excepted)."""
    if isinstance(v, dict):
        for k, x in v.items():
            if "_" in k and not where.endswith(("properties", "partialFingerprints", "originalUriBaseIds")):
                problems.append(f"{where}: `{k}` is not camelCase")
            if k not in ("properties", "partialFingerprints"):
                keys(x, f"{where}.{k}")
    elif isinstance(v, list):
        for i, x in enumerate(v):
            keys(x, f"{where}[{i}]")


def walk(m, where):
    if isinstance(m, BaseModel):
        for k, x in (m.model_extra or {}).items():
            model = SPEC_ONLY.get((type(m).__name__, k))
            if model is None:
                problems.append(f"{where}: unknown property `{k}` of {type(m).__name__}")
            else:
                for i, item in enumerate(x):
                    walk(model.model_validate(item), f"{where}.{k}[{i}]")
        for name in type(m).model_fields:
            if name != "properties":
                walk(getattr(m, name), f"{where}.{name}")
    elif isinstance(m, list):
        for i, x in enumerate(m):
            walk(x, f"{where}[{i}]")
    elif isinstance(m, dict):
        for k, x in m.items():
            walk(x, f"{where}[{k!r}]")


keys(doc, "$")
log = Sarif.model_validate(doc)
walk(log, "$")
if log.version != "2.1.0" or len(log.runs) != 1:
    problems.append(f"version {log.version}, {len(log.runs)} runs")
run = log.runs[0]
rules = run.tool.driver.rules or []
results = []
for i, r in enumerate(run.results or []):
    if not r.message.text:
        problems.append(f"result {i}: no message text")
    rule = rules[r.rule_index] if r.rule_index is not None and r.rule_index < len(rules) else None
    if rule is None or rule.id != r.rule_id:
        problems.append(f"result {i}: ruleIndex {r.rule_index} is not rule {r.rule_id}")
    out = {
        "ruleId": r.rule_id,
        "rule": rule.name if rule else None,
        "level": r.level.value if r.level else None,
        "message": r.message.text,
        "fingerprint": (r.partial_fingerprints or {}).get("patchgenFingerprint/v1"),
    }
    if r.locations:
        p = r.locations[0].physical_location
        out["uri"] = p.artifact_location.uri
        out["uriBaseId"] = p.artifact_location.uri_base_id
        if p.region is not None:
            if p.region.start_line is None or p.region.start_line < 1:
                problems.append(f"result {i}: region without a startLine")
            out["startLine"] = p.region.start_line
            out["startColumn"] = p.region.start_column
    results.append(out)
inv = (run.invocations or [None])[0]
notes = (inv.model_extra or {}).get("toolExecutionNotifications", []) if inv else []
base = (run.original_uri_base_ids or {}).get("%SRCROOT%")
print(
    json.dumps(
        {
            "version": log.version,
            "base": base.uri if base else None,
            "successful": inv.execution_successful if inv else None,
            "notifications": [n["message"]["text"] for n in notes],
            "rules": [
                {
                    "id": r.id,
                    "name": r.name,
                    "short": r.short_description.text if r.short_description else None,
                    "helpUri": r.help_uri,
                    "help": r.help.markdown if r.help else None,
                    "level": r.default_configuration.level if r.default_configuration else None,
                }
                for r in rules
            ],
            "results": results,
        }
    )
)
if problems:
    print("\n".join(problems), file=sys.stderr)
    sys.exit(1)
