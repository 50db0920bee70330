"""The accuracy wing: `verify`'s run and judgement (suite), msOpST-style case files (cases, case_fields) and
msOpST's error_threshold rule; the Ascend standards themselves are ascendc_ops.precision."""
