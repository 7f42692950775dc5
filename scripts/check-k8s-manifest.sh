#!/usr/bin/env bash
# Checks examples/k8s/sweep-indexed-job.yaml without a cluster (issue 16): it parses as YAML,
# holds an Indexed Job whose pods run `ticklab sweep --shard $JOB_COMPLETION_INDEX/N` with N
# equal to its completions, a merge Job that runs `ticklab merge`, and the grid ConfigMap it
# mounts equals examples/sweeps/e1-grid.toml's keys. Needs python3 with PyYAML
# (Debian: python3-yaml). It does not run the Job: nothing here is a Kubernetes cluster.
set -euo pipefail
cd "$(dirname "$0")/.."
python3 - examples/k8s/sweep-indexed-job.yaml examples/sweeps/e1-grid.toml <<'PY'
import sys, yaml, tomllib
docs = [d for d in yaml.safe_load_all(open(sys.argv[1])) if d]
by = {(d["kind"], d["metadata"]["name"]): d for d in docs}
job = by[("Job", "ticklab-sweep")]
spec = job["spec"]
assert job["apiVersion"] == "batch/v1", job["apiVersion"]
assert spec["completionMode"] == "Indexed", spec.get("completionMode")
n = spec["completions"]
assert spec["parallelism"] <= n
pod = spec["template"]["spec"]
assert pod["restartPolicy"] in ("Never", "OnFailure")
c = pod["containers"][0]
env = {e["name"]: e["value"] for e in c.get("env", [])}
assert env["SHARDS"] == str(n), (env, n)
cmd = " ".join(c["command"])
assert "ticklab sweep" in cmd and '--shard "$JOB_COMPLETION_INDEX/$SHARDS"' in cmd, cmd
merge = by[("Job", "ticklab-sweep-merge")]
mc = merge["spec"]["template"]["spec"]["containers"][0]
assert "ticklab merge" in " ".join(mc["command"])
assert {e["name"]: e["value"] for e in mc["env"]}["SHARDS"] == str(n)
grid = by[("ConfigMap", "ticklab-sweep-grid")]["data"]["grid.toml"]
with open(sys.argv[2], "rb") as f:
    assert tomllib.loads(grid) == tomllib.load(f), "ConfigMap grid differs from e1-grid.toml"
vols = {v["name"] for v in pod["volumes"]}
assert {m["name"] for m in c["volumeMounts"]} <= vols
print(f"k8s manifest ok: Indexed Job ticklab-sweep ({n} completions, parallelism "
      f"{spec['parallelism']}), merge Job, grid ConfigMap == e1-grid.toml; not run (no cluster)")
PY
