"""Language model (training, scoring) and keywords (SPEC §3, §4)."""
