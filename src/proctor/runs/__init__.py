"""Run folders: results.json, samples.jsonl and the resolved task configs."""
