"""hicann/cann-bench as a harness preset: its facts (data), its cases mapped to our ops (preset), its accuracy rule
(judge), the report of `bench`/`verify --preset cann-bench` (report) and why a case is below 1.0x (explain)."""
